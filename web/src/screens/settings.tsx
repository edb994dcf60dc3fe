import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import type { Project } from "../../../gen/vigil/v1/projects_pb.js";
import { api } from "../api.js";
import { useProject } from "../session.js";
import { formatTime } from "../ui/format.js";
import { useAction } from "../ui/hooks.js";
import { Button, ConfirmButton, ErrorMessage, Field, PageHeader } from "../ui/kit.js";

// A project's settings: rename and data retention (owner or admin), delete (owner only).

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
      <RetentionCard project={project} canAdmin={canAdmin} reload={reload} />
      <section class="card danger-zone">
        <h2>Delete this project</h2>
        <p>
          Its events, metrics, monitors, webhooks, status pages and API keys go with it. Keys stop working at once; the
          stored data is removed in the background.
        </p>
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

/** What is in force, in words: "30 days (this project's setting)", "kept forever". */
function retentionText(p: Project): string {
  const r = p.retention;
  if (!r || r.days === undefined) return "Kept forever";
  const days = `${r.days} ${r.days === 1 ? "day" : "days"}`;
  return r.source === "project" ? `${days} (this project's setting)` : `${days} (the server's default)`;
}

/**
 * Data retention (decisions.md "Data lifecycle"): events, metric points and heartbeats older than
 * the period are removed by a background pass; the project may set its own period or use the
 * operator's default (RETENTION_DAYS).
 */
function RetentionCard({ project, canAdmin, reload }: { project: Project; canAdmin: boolean; reload: () => void }) {
  const [days, setDays] = useState(project.retentionDays === undefined ? "" : String(project.retentionDays));
  const save = useAction();
  const [saved, setSaved] = useState(false);
  const r = project.retention;
  const submit = async (value: number | null) => {
    setSaved(false);
    const done = await save.run(() =>
      api.projects.updateProject({ projectId: project.id, retentionDays: fromJson(ValueSchema, value) }),
    );
    if (done) {
      setSaved(true);
      if (value === null) setDays("");
      reload();
    }
  };
  return (
    <section class="card" aria-labelledby="retention-title">
      <h2 id="retention-title">Data retention</h2>
      <p class="muted">
        Events, metric points and heartbeats older than this are removed, whole UTC days at a time, and analytics stop
        counting them. User records, metric and uptime rollups stay.
      </p>
      <dl class="retention">
        <dt>In force</dt>
        <dd data-testid="retention-in-force">{retentionText(project)}</dd>
        {r?.cutoff && (
          <>
            <dt>Removing data before</dt>
            <dd>{formatTime(r.cutoff)}</dd>
          </>
        )}
        {r?.lastRunAt && (
          <>
            <dt>Last run</dt>
            <dd>{formatTime(r.lastRunAt)}</dd>
          </>
        )}
        {r?.nextRunAt && r.days !== undefined && (
          <>
            <dt>Next run</dt>
            <dd>{formatTime(r.nextRunAt)}</dd>
          </>
        )}
      </dl>
      {canAdmin ? (
        <form
          class="form-inline"
          onSubmit={(e) => {
            e.preventDefault();
            // A number the server checks (an integer within the operator's maximum); text it refuses by name.
            void submit(days.trim() === "" ? null : Number(days));
          }}
        >
          <Field
            label="Days to keep"
            name="retentionDays"
            type="number"
            min={1}
            step={1}
            inputMode="numeric"
            value={days}
            onValue={setDays}
            field="retentionDays"
            error={save.error}
            hint="Empty: the server's default."
          />
          <Button variant="primary" type="submit" busy={save.busy}>
            Save retention
          </Button>
          {project.retentionDays !== undefined && (
            <Button onClick={() => void submit(null)} disabled={save.busy}>
              Use the server's default
            </Button>
          )}
          {saved && <span role="status">Saved.</span>}
        </form>
      ) : (
        <p class="muted">Only the project's owner and admins can change it.</p>
      )}
      <ErrorMessage error={save.error} />
    </section>
  );
}
