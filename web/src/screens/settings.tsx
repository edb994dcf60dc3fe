import { useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { api } from "../api.js";
import { useProject } from "../session.js";
import { useAction } from "../ui/hooks.js";
import { Button, ConfirmButton, ErrorMessage, Field, PageHeader } from "../ui/kit.js";

// A project's settings: rename (owner or admin), delete (owner only).

export function Settings() {
  const { project, role, canAdmin, reload } = useProject();
  const loc = useLocation();
  const [name, setName] = useState(project.name);
  const rename = useAction();
  const remove = useAction();
  const [saved, setSaved] = useState(false);
  return (
    <>
      <PageHeader title="Settings" subtitle={`Project ID ${project.id}`} />
      <section class="card">
        <h2>Name</h2>
        <form
          class="form-inline"
          onSubmit={async (e) => {
            e.preventDefault();
            setSaved(false);
            const r = await rename.run(() => api.projects.updateProject({ projectId: project.id, name }));
            if (r) {
              setSaved(true);
              reload();
            }
          }}
        >
          <Field
            label="Project name"
            name="name"
            required
            value={name}
            onValue={setName}
            disabled={!canAdmin}
            field="name"
            error={rename.error}
          />
          <Button variant="primary" type="submit" busy={rename.busy} disabled={!canAdmin || name === project.name}>
            Rename
          </Button>
          {saved && <span role="status">Saved.</span>}
        </form>
        {!canAdmin && <p class="muted">Only the project's owner and admins can rename it.</p>}
        <ErrorMessage error={rename.error} />
      </section>
      <section class="card danger-zone">
        <h2>Delete this project</h2>
        <p>Its events, metrics, monitors, webhooks, status pages and API keys go with it. Keys stop working at once.</p>
        {role === "owner" ? (
          <ConfirmButton
            label="Delete project"
            busy={remove.busy}
            onConfirm={async () => {
              const r = await remove.run(() => api.projects.deleteProject({ projectId: project.id }));
              if (r) loc.route("/projects", true);
            }}
          />
        ) : (
          <p class="muted">Only the project's owner can delete it.</p>
        )}
        <ErrorMessage error={remove.error} />
      </section>
    </>
  );
}
