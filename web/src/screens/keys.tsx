import { fromJson } from "@bufbuild/protobuf";
import { ListValueSchema } from "@bufbuild/protobuf/wkt";
import { useId, useState } from "preact/hooks";
import type { CreatedApiKey } from "../../../gen/vigil/v1/projects_pb.js";
import { api, fieldErrors } from "../api.js";
import { useProject } from "../session.js";
import { curlPost } from "../ui/curl.js";
import { pingCurl, pingUrl, rememberPingKey } from "../ui/ping-keys.js";
import { formatTime, timeAgo } from "../ui/format.js";
import { useAction, useAsync } from "../ui/hooks.js";
import {
  Button,
  ConfirmButton,
  CopyButton,
  Empty,
  ErrorMessage,
  Field,
  Loading,
  PageHeader,
  SecretOnce,
  Select,
} from "../ui/kit.js";
import "./keys.css";

// A project's API keys (the screen a new project lands on): create one (its secret shown once,
// with a first curl that sends an event to this Vigil), list them with their last use, revoke.
// Below, the origins publishable keys may be used from. Listing and managing keys is for the
// owner and admins (decisions.md "Projects, members, keys"; the server answers a member 403).

const ENVIRONMENTS = ["production", "development", "preview"] as const;
type Environment = (typeof ENVIRONMENTS)[number];
type Kind = "secret" | "publishable" | "ping";

const KINDS: { value: Kind; label: string; what: string }[] = [
  {
    value: "secret",
    label: "Secret",
    what: "Everything an API key may do: send events, metrics and heartbeats, read events, analytics and users. Keep it on servers.",
  },
  {
    value: "publishable",
    label: "Publishable",
    what: "Only sends events (POST /v1/events and /v1/events/batch), so it is safe in a web page or app bundle.",
  },
  {
    value: "ping",
    label: "Ping",
    what: "Only sends heartbeats and cron job runs, also in a URL with no header (/ping/<key>/<monitor>): for crontabs.",
  },
];

/** The first request a new key can make: one event to this Vigil (docs/clients.md, docs/events.md). */
const firstCurl = (secret: string) =>
  curlPost("/v1/events", { type: "hello", userId: "user-1", data: { from: "curl" } }, secret);

export function Keys() {
  const { project, canAdmin } = useProject();
  const keys = useAsync(
    () =>
      canAdmin ? api.projects.listApiKeys({ projectId: project.id }).then((r) => r.data) : Promise.resolve(undefined),
    [project.id, canAdmin],
  );
  const [created, setCreated] = useState<CreatedApiKey>();
  const revoke = useAction();

  return (
    <>
      <PageHeader
        title="API keys"
        subtitle="Your applications and servers send events to this project with an API key in the Authorization header."
      />
      {created && <NewKey created={created} onDone={() => setCreated(undefined)} />}
      {canAdmin ? (
        <>
          {!created && <CreateKey onCreated={(k) => (setCreated(k), keys.reload())} />}
          <ErrorMessage error={keys.error} />
          <ErrorMessage error={revoke.error} />
          {keys.loading && !keys.data && <Loading />}
          {keys.data?.length === 0 && (
            <Empty title="No API keys yet">
              <p>
                A key is how your code proves it may write to this project: a <strong>secret</strong> key on your
                servers, a <strong>publishable</strong> key in a web page. Create one above; you get a ready-to-paste
                curl command that sends a first event.
              </p>
            </Empty>
          )}
          {keys.data && keys.data.length > 0 && (
            <div class="table-wrap">
              <table class="keys-table">
                <caption class="visually-hidden">API keys</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Environment</th>
                    <th scope="col">Prefix</th>
                    <th scope="col">Created</th>
                    <th scope="col">Last used</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {keys.data.map((k) => (
                    <tr key={k.id}>
                      <td>{k.name}</td>
                      <td>
                        <span class={`badge ${k.kind === "publishable" ? "badge-warn" : "badge-neutral"}`}>
                          {k.kind}
                        </span>
                      </td>
                      <td>{k.environment}</td>
                      <td>
                        <code>{k.prefix}…</code>
                      </td>
                      <td>{formatTime(k.createdAt)}</td>
                      <td title={k.lastUsedAt ? formatTime(k.lastUsedAt) : undefined}>{timeAgo(k.lastUsedAt)}</td>
                      <td class="row-actions">
                        <ConfirmButton
                          label="Revoke"
                          confirmLabel={`Revoke ${k.name}`}
                          busy={revoke.busy}
                          onConfirm={async () => {
                            const r = await revoke.run(() =>
                              api.projects.revokeApiKey({ projectId: project.id, keyId: k.id }),
                            );
                            if (r) keys.reload();
                          }}
                        />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      ) : (
        <Empty title="Keys are managed by the project's owner and admins">
          <p>
            Ask one of them for a key (members cannot list, create or revoke keys). You can still read everything the
            keys send in Events, Analytics, Metrics and Uptime.
          </p>
        </Empty>
      )}
      <AllowedOrigins />
    </>
  );
}

function CreateKey({ onCreated }: { onCreated: (k: CreatedApiKey) => void }) {
  const { project } = useProject();
  const [name, setName] = useState("");
  const [environment, setEnvironment] = useState<Environment>("production");
  const [kind, setKind] = useState<Kind>("secret");
  const action = useAction();
  const kindError = fieldErrors(action.error).kind;
  return (
    <form
      class="card key-form"
      aria-label="Create an API key"
      onSubmit={async (e) => {
        e.preventDefault();
        const r = await action.run(() => api.projects.createApiKey({ projectId: project.id, name, environment, kind }));
        if (r?.data) {
          setName("");
          // A monitor's page shows the full ping URL while this session lasts (ui/ping-keys.ts).
          if (r.data.kind === "ping") rememberPingKey(project.id, { name: r.data.name, secret: r.data.secret });
          onCreated(r.data);
        }
      }}
    >
      <h2>Create a key</h2>
      <div class="form-inline">
        <Field
          label="Key name"
          name="name"
          required
          maxLength={200}
          placeholder="backend, website…"
          value={name}
          onValue={setName}
          field="name"
          error={action.error}
        />
        <Select
          label="Environment"
          name="environment"
          value={environment}
          options={ENVIRONMENTS}
          onValue={setEnvironment}
        />
      </div>
      <fieldset class="kinds">
        <legend>Kind</legend>
        {KINDS.map((k) => (
          <label key={k.value} class={`kind${kind === k.value ? " kind-on" : ""}`}>
            <input
              type="radio"
              name="kind"
              value={k.value}
              checked={kind === k.value}
              onChange={() => setKind(k.value)}
            />
            <span>
              <strong>{k.label}</strong>
              <small>{k.what}</small>
            </span>
          </label>
        ))}
        {kindError && <small class="field-error">{kindError}</small>}
      </fieldset>
      <Button variant="primary" type="submit" busy={action.busy}>
        Create key
      </Button>
      <ErrorMessage error={action.error} />
    </form>
  );
}

/** The secret of a key just created: shown once, with a first request to paste into a terminal. */
function NewKey({ created, onDone }: { created: CreatedApiKey; onDone: () => void }) {
  if (created.kind === "ping") return <NewPingKey created={created} onDone={onDone} />;
  const curl = firstCurl(created.secret);
  return (
    <SecretOnce
      title={`Your new ${created.kind} key “${created.name}” (${created.environment})`}
      secret={created.secret}
      kept="hash"
      onDone={onDone}
    >
      <h3>Send a first event</h3>
      <p>Paste this into a terminal; the event appears under Events.</p>
      <div class="first-curl">
        <pre data-copy={curl} data-testid="curl">
          {curl}
        </pre>
        <CopyButton text={curl} label="Copy command" />
      </div>
      {created.kind === "publishable" && (
        <p class="muted">
          A publishable key only sends events. From a web page, the browser's origin must be in the allowed origins
          below (when the list is not empty).
        </p>
      )}
    </SecretOnce>
  );
}

/** A ping key just created: its secret once, and the ping URL a crontab line calls. */
function NewPingKey({ created, onDone }: { created: CreatedApiKey; onDone: () => void }) {
  const curl = pingCurl(pingUrl(created.secret, "<monitor-slug>"));
  return (
    <SecretOnce
      title={`Your new ping key “${created.name}” (${created.environment})`}
      secret={created.secret}
      kept="hash"
      onDone={onDone}
    >
      <h3>Ping a monitor</h3>
      <p>
        Put this at the end of a crontab line (after <code>&amp;&amp;</code>), with the monitor's slug; add{" "}
        <code>/start</code>, <code>/fail</code> or <code>/exit/$?</code> to report a run. Each monitor's page shows its
        URL while this session lasts.
      </p>
      <div class="first-curl">
        <pre data-copy={curl} data-testid="ping-curl">
          {curl}
        </pre>
        <CopyButton text={curl} label="Copy command" />
      </div>
    </SecretOnce>
  );
}

/** The origins publishable keys may be used from: read by everyone, changed by the owner and admins. */
function AllowedOrigins() {
  const { project, canAdmin, reload } = useProject();
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState("");
  const action = useAction();
  const id = useId();
  const errors = fieldErrors(action.error);
  const firstError = Object.entries(errors).find(([f]) => f.startsWith("allowedOrigins"));
  const origins = project.allowedOrigins;
  return (
    <section class="card origins" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Allowed origins for publishable keys</h2>
      <p class="muted">
        A browser names the site a request comes from (its Origin). Publishable keys are accepted only from these sites;
        with none listed, from any site. Requests without an Origin (servers, curl) and secret keys are not checked.
      </p>
      {!editing && (
        <>
          {origins.length === 0 ? (
            <p>
              <strong>Any origin</strong> may use this project's publishable keys.
            </p>
          ) : (
            <ul class="origin-list" aria-label="Allowed origins">
              {origins.map((o) => (
                <li key={o}>
                  <code>{o}</code>
                </li>
              ))}
            </ul>
          )}
          {canAdmin ? (
            <Button
              onClick={() => {
                setText(origins.join("\n"));
                action.clear();
                setEditing(true);
              }}
            >
              Edit allowed origins
            </Button>
          ) : (
            <p class="muted">Only the project's owner and admins can change them.</p>
          )}
        </>
      )}
      {editing && (
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            const list = text
              .split(/[\s,]+/)
              .map((s) => s.trim())
              .filter(Boolean);
            const r = await action.run(() =>
              api.projects.updateProject({ projectId: project.id, allowedOrigins: fromJson(ListValueSchema, list) }),
            );
            if (r) {
              setEditing(false);
              reload();
            }
          }}
        >
          <div class="field">
            <label for={`${id}-input`}>Origins, one per line</label>
            <textarea
              id={`${id}-input`}
              rows={4}
              value={text}
              placeholder={"https://shop.example.com\nhttp://localhost:5173"}
              aria-invalid={firstError ? true : undefined}
              aria-describedby={`${id}-note`}
              onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
            />
            <small id={`${id}-note`} class={firstError ? "field-error" : "muted"}>
              {firstError
                ? `${originLine(firstError[0], text)}${firstError[1]}`
                : "scheme://host[:port], no path. Leave empty to allow any origin."}
            </small>
          </div>
          <div class="actions">
            <Button variant="primary" type="submit" busy={action.busy}>
              Save origins
            </Button>
            <Button onClick={() => setEditing(false)}>Cancel</Button>
          </div>
          {!firstError && <ErrorMessage error={action.error} />}
        </form>
      )}
    </section>
  );
}

/** "allowedOrigins[2]" → "Line 3: " (the entries as the textarea lists them). */
function originLine(field: string, text: string): string {
  const m = /\[(\d+)\]/.exec(field);
  if (!m) return "";
  const entries = text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  const entry = entries[Number(m[1])];
  return entry ? `${entry}: ` : "";
}
