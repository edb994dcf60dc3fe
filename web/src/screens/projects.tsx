import { useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { api } from "../api.js";
import { useAction, useAsync } from "../ui/hooks.js";
import { formatTime } from "../ui/format.js";
import { Button, Empty, ErrorMessage, Field, Loading, PageHeader, Select } from "../ui/kit.js";

/** The platforms a project may name (docs/projects.md). */
const PLATFORMS = [
  { value: "browser", label: "Browser" },
  { value: "react", label: "React" },
  { value: "next", label: "Next.js" },
  { value: "node", label: "Node.js" },
  { value: "other", label: "Other" },
] as const;
type Platform = (typeof PLATFORMS)[number]["value"];

// The signed-in person's projects, and creating one (the creator becomes its owner).

export function ProjectList() {
  const loc = useLocation();
  const projects = useAsync(() => api.projects.listProjects({}).then((r) => r.data), []);
  const [creating, setCreating] = useState(false);
  const [name, setName] = useState("");
  const [platform, setPlatform] = useState<Platform>("browser");
  const action = useAction();
  const create = (
    <form
      class="card form-inline"
      aria-label="New project"
      onSubmit={async (e) => {
        e.preventDefault();
        const r = await action.run(() => api.projects.createProject({ name, platform }));
        if (r?.data) loc.route(`/projects/${r.data.id}/keys`);
      }}
    >
      <Field
        label="Project name"
        name="name"
        required
        value={name}
        onValue={setName}
        field="name"
        error={action.error}
      />
      <Select label="Platform" name="platform" value={platform} options={PLATFORMS} onValue={setPlatform} />
      <Button variant="primary" type="submit" busy={action.busy}>
        Create project
      </Button>
      <ErrorMessage error={action.error} />
    </form>
  );
  return (
    <>
      <PageHeader
        title="Projects"
        actions={
          !creating && projects.data?.length ? (
            <Button variant="primary" onClick={() => setCreating(true)}>
              New project
            </Button>
          ) : undefined
        }
      />
      <ErrorMessage error={projects.error} />
      {projects.loading && !projects.data && <Loading />}
      {projects.data?.length === 0 && (
        <Empty title="Create your first project">
          <p>A project holds one product's events, metrics, monitors and webhooks. Its API keys send data to it.</p>
          {create}
        </Empty>
      )}
      {creating && projects.data?.length ? create : null}
      {projects.data && projects.data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Platform</th>
              <th scope="col">Your role</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {projects.data.map((p) => (
              <tr key={p.id}>
                <td>
                  <a href={`/projects/${p.id}/events`}>{p.name}</a>
                </td>
                <td>{p.platform}</td>
                <td>{p.role}</td>
                <td>{formatTime(p.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
