import { useState } from "preact/hooks";
import type { Member } from "../../../gen/vigil/v1/projects_pb.js";
import { api } from "../api.js";
import { useProject, useSession } from "../session.js";
import { formatTime } from "../ui/format.js";
import { useAction, useAsync } from "../ui/hooks.js";
import { Button, ConfirmButton, ErrorMessage, Field, Loading, PageHeader, Select } from "../ui/kit.js";
import "./members.css";

// A project's members: everyone reads the list; the owner and admins add an existing account by
// email, change roles and remove people. The owner's row has no controls (the server refuses to
// remove or demote the owner; should it answer so anyway, its words are shown).

type AssignableRole = "admin" | "member";

const ROLES: { value: AssignableRole; label: string }[] = [
  { value: "member", label: "Member" },
  { value: "admin", label: "Admin" },
];

const ROLE_HELP =
  "Members read everything in the project. Admins also manage keys, members, webhooks, monitors and status pages. Only the owner can delete the project.";

export function Members() {
  const { project, canAdmin, reload: reloadProject } = useProject();
  const { account } = useSession();
  const members = useAsync(() => api.projects.listMembers({ projectId: project.id }).then((r) => r.data), [project.id]);
  const change = useAction();
  const [notice, setNotice] = useState<string>();

  const setRole = async (m: Member, role: AssignableRole) => {
    setNotice(undefined);
    const r = await change.run(() => api.projects.updateMember({ projectId: project.id, userId: m.userId, role }));
    if (r) {
      setNotice(`${m.email} is now ${role === "admin" ? "an admin" : "a member"}.`);
      members.reload();
      // Your own role changed: the screens' controls follow it.
      if (m.userId === account?.id) reloadProject();
    } else members.reload();
  };
  const remove = async (m: Member) => {
    setNotice(undefined);
    const r = await change.run(() => api.projects.removeMember({ projectId: project.id, userId: m.userId }));
    if (r) setNotice(`${m.email} was removed from the project.`);
    // On a refusal too: the list may be stale (someone else changed it meanwhile).
    members.reload();
  };

  const list = members.data;
  return (
    <>
      <PageHeader title="Members" subtitle={ROLE_HELP} />
      {canAdmin ? (
        <AddMember
          onAdded={(m) => {
            setNotice(`${m.email} was added as ${m.role === "admin" ? "an admin" : "a member"}.`);
            members.reload();
          }}
        />
      ) : (
        <p class="muted">Only the project's owner and admins can add, change or remove members.</p>
      )}
      <ErrorMessage error={members.error} />
      <ErrorMessage error={change.error} />
      {notice && (
        <p role="status" class="notice">
          {notice}
        </p>
      )}
      {members.loading && !list && <Loading />}
      {list && (
        <div class="table-wrap">
          <table class="members-table">
            <caption class="visually-hidden">Members of {project.name}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Added</th>
                {canAdmin && (
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {list.map((m) => {
                const controls = canAdmin && m.role !== "owner";
                return (
                  <tr key={m.userId}>
                    <td>
                      {m.name || <span class="muted">—</span>}
                      {m.userId === account?.id && <span class="muted"> (you)</span>}
                    </td>
                    <td>{m.email}</td>
                    <td>
                      {controls ? (
                        <Select
                          label={`Role of ${m.email}`}
                          hideLabel
                          value={m.role as AssignableRole}
                          options={ROLES}
                          onValue={(role) => setRole(m, role)}
                        />
                      ) : (
                        <span class={`badge ${m.role === "owner" ? "badge-good" : "badge-neutral"}`}>{m.role}</span>
                      )}
                    </td>
                    <td>{formatTime(m.createdAt)}</td>
                    {canAdmin && (
                      <td class="row-actions">
                        {controls ? (
                          <ConfirmButton
                            label="Remove"
                            confirmLabel={`Remove ${m.email}`}
                            busy={change.busy}
                            onConfirm={() => remove(m)}
                          />
                        ) : (
                          <span class="muted">Cannot be removed</span>
                        )}
                      </td>
                    )}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {list && list.length === 1 && (
        <p class="muted alone">
          {canAdmin
            ? "Nobody else is here yet. Add a teammate by the email they signed up with; they need an account first (sign-up at /signup)."
            : "Nobody else is in this project yet."}
        </p>
      )}
    </>
  );
}

function AddMember({ onAdded }: { onAdded: (m: Member) => void }) {
  const { project } = useProject();
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<AssignableRole>("member");
  const action = useAction();
  return (
    <form
      class="card form-inline add-member"
      aria-label="Add a member"
      onSubmit={async (e) => {
        e.preventDefault();
        const r = await action.run(() => api.projects.addMember({ projectId: project.id, email: email.trim(), role }));
        if (r?.data) {
          setEmail("");
          onAdded(r.data);
        }
      }}
    >
      <Field
        label="Email"
        type="email"
        name="email"
        required
        autoComplete="off"
        placeholder="teammate@example.com"
        value={email}
        onValue={(v) => {
          setEmail(v);
          action.clear();
        }}
        field="email"
        error={action.error}
        hint="An existing Vigil account."
      />
      <Select label="Role" name="role" value={role} options={ROLES} onValue={setRole} />
      <Button variant="primary" type="submit" busy={action.busy}>
        Add member
      </Button>
      <div class="add-member-error">
        <ErrorMessage error={action.error} />
      </div>
    </form>
  );
}
