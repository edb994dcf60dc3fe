import { useId, useState } from "preact/hooks";
import type { Incident, Monitor } from "../../../gen/vigil/v1/uptime_pb.js";
import type { Page } from "../../../gen/vigil/v1/pages_pb.js";
import { api, fieldErrors } from "../api.js";
import { useAction, useAsync } from "../ui/hooks.js";
import {
  Button,
  ConfirmButton,
  ErrorMessage,
  Field,
  Loading,
  MonitorChecklist,
  SecretOnce,
  Select,
  StatusBadge,
} from "../ui/kit.js";
import { formatTime } from "../ui/format.js";

// What a status page tells its readers beyond its monitors (docs/pages.md "Subscribers", docs/uptime.md
// "Manual incidents"): the incident composer (title, impact, monitors, status, message, with a
// preview of how the public page shows it), later updates with a status on the open ones, and
// the page's subscribers with a remove button, and a form adding a webhook subscriber (owners and
// admins; docs/pages.md "Webhook subscribers").

const IMPACTS = ["minor", "major", "critical"] as const;
const STAGES = ["investigating", "identified", "monitoring", "resolved"] as const;
type Impact = (typeof IMPACTS)[number];
type Stage = (typeof STAGES)[number];

function TextArea(props: {
  label: string;
  value: string;
  field: string;
  error: unknown;
  onValue: (v: string) => void;
}) {
  const id = useId();
  const message = fieldErrors(props.error)[props.field];
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <textarea
        id={id}
        rows={2}
        maxLength={2000}
        value={props.value}
        aria-invalid={message ? true : undefined}
        aria-describedby={message ? `${id}-note` : undefined}
        onInput={(e) => props.onValue((e.target as HTMLTextAreaElement).value)}
      />
      {message && (
        <small id={`${id}-note`} class="field-error">
          {message}
        </small>
      )}
    </div>
  );
}

/** The page's manual incidents: the composer, its preview, and updates on the open ones. */
export function IncidentComposer(props: { projectId: string; page: Page; monitors: Monitor[] }) {
  const { page } = props;
  const names = new Map(props.monitors.map((m) => [m.id, m.name]));
  const nameOf = (id: string) => page.monitors.find((m) => m.monitorId === id)?.name || names.get(id) || id;
  const onPage = new Set(page.monitors.map((m) => m.monitorId));
  const incidents = useAsync(
    () => api.uptime.listProjectIncidents({ projectId: props.projectId, limit: 100 }).then((r) => r.data),
    [props.projectId],
  );
  const open = (incidents.data ?? []).filter(
    (i) => i.kind === "manual" && i.status !== "resolved" && i.monitorIds.some((id) => onPage.has(id)),
  );
  const [composing, setComposing] = useState(false);
  const [title, setTitle] = useState("");
  const [impact, setImpact] = useState<Impact>("major");
  const [status, setStatus] = useState<Stage>("investigating");
  const [message, setMessage] = useState("");
  const [chosen, setChosen] = useState<string[]>(page.monitors.map((m) => m.monitorId));
  const act = useAction();
  if (page.monitors.length === 0) return null;

  const post = async () => {
    const r = await act.run(() =>
      api.uptime.createIncident({ projectId: props.projectId, title, impact, status, message, monitorIds: chosen }),
    );
    if (r) {
      setComposing(false);
      setTitle("");
      setMessage("");
      incidents.reload();
    }
  };

  return (
    <section class="page-incidents" aria-label={`Incidents of ${page.title}`}>
      <h3>Incidents</h3>
      <ErrorMessage error={incidents.error} />
      {incidents.loading && !incidents.data && <Loading />}
      {open.map((i) => (
        <OpenIncident
          key={i.id}
          projectId={props.projectId}
          incident={i}
          nameOf={nameOf}
          onChanged={incidents.reload}
        />
      ))}
      {!composing ? (
        <Button onClick={() => setComposing(true)}>New incident</Button>
      ) : (
        <form
          class="incident-composer"
          aria-label="New incident"
          onSubmit={(e) => {
            e.preventDefault();
            void post();
          }}
        >
          <div class="grid-2">
            <Field
              label="Title"
              value={title}
              required
              maxLength={200}
              field="title"
              error={act.error}
              onValue={setTitle}
            />
            <Select label="Impact" value={impact} options={IMPACTS} onValue={setImpact} />
            <Select label="Status" value={status} options={STAGES} onValue={setStatus} />
          </div>
          <MonitorChecklist
            class="incident-monitors"
            legend="Affected monitors"
            monitors={page.monitors.map((m) => ({ id: m.monitorId, name: nameOf(m.monitorId) }))}
            chosen={chosen}
            onChosen={setChosen}
            error={act.error}
          />
          <TextArea label="Message" value={message} field="message" error={act.error} onValue={setMessage} />
          <div class="incident-preview" aria-label="Preview of the public page">
            <p class="muted small">How /status/{page.slug} will show it:</p>
            <article class={`preview-incident impact-${impact}`}>
              <h4>
                {title || "Untitled incident"} <StatusBadge status={status} />
              </h4>
              <p class="muted small">
                {impact} impact · {chosen.map(nameOf).join(", ") || "no monitor chosen"}
              </p>
              <p>
                <strong>{status[0].toUpperCase() + status.slice(1)}</strong> — {message || "…"}
              </p>
            </article>
          </div>
          <ErrorMessage error={act.error} />
          <div class="actions">
            <Button type="submit" variant="primary" busy={act.busy}>
              Post incident
            </Button>
            <Button onClick={() => setComposing(false)}>Cancel</Button>
          </div>
        </form>
      )}
    </section>
  );
}

function OpenIncident(props: {
  projectId: string;
  incident: Incident;
  nameOf: (id: string) => string;
  onChanged: () => void;
}) {
  const i = props.incident;
  const [status, setStatus] = useState<Stage>(
    (STAGES as readonly string[]).includes(i.status) ? (i.status as Stage) : "identified",
  );
  const [message, setMessage] = useState("");
  const act = useAction();
  return (
    <form
      class="open-incident"
      aria-label={`Update ${i.title}`}
      onSubmit={async (e) => {
        e.preventDefault();
        const r = await act.run(() =>
          api.uptime.createIncidentUpdate({ projectId: props.projectId, incidentId: i.id, message, status }),
        );
        if (r) {
          setMessage("");
          props.onChanged();
        }
      }}
    >
      <h4>
        {i.title} <StatusBadge status={i.status} />
      </h4>
      <p class="muted small">
        {i.impact} impact · {i.monitorIds.map(props.nameOf).join(", ")} · since {formatTime(i.startedAt)}
      </p>
      <div class="grid-2">
        <Select label="New status" value={status} options={STAGES} onValue={setStatus} />
        <TextArea label="Update" value={message} field="message" error={act.error} onValue={setMessage} />
      </div>
      <ErrorMessage error={act.error} />
      <Button type="submit" busy={act.busy}>
        Post update
      </Button>
    </form>
  );
}

/** The page's subscribers (owners and admins): address or URL, status, since; remove; add a webhook subscriber. */
export function PageSubscribers(props: { projectId: string; page: Page }) {
  const list = useAsync(
    () =>
      api.subscribers
        .listPageSubscribers({ projectId: props.projectId, pageId: props.page.id, limit: 1000 })
        .then((r) => r.data),
    [props.projectId, props.page.id],
  );
  const act = useAction();
  const add = useAction();
  const [url, setUrl] = useState("");
  const [created, setCreated] = useState<{ url: string; secret: string }>();
  return (
    <section class="page-subscribers" aria-label={`Subscribers of ${props.page.title}`}>
      <h3>Subscribers</h3>
      <ErrorMessage error={list.error ?? act.error} />
      {created && (
        <SecretOnce
          title={`Signing secret of the webhook subscriber ${created.url}`}
          secret={created.secret}
          kept="secret"
          onDone={() => setCreated(undefined)}
        >
          <p class="muted">Its POSTs carry X-Vigil-Signature, checked as an http webhook's.</p>
        </SecretOnce>
      )}
      {!list.data ? (
        list.loading && <Loading />
      ) : list.data.length === 0 ? (
        <p class="muted">
          No subscribers yet. Readers subscribe by email on the public page (with the server's SMTP_URL set); a webhook
          subscriber is added below.
        </p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Email or URL</th>
              <th>Status</th>
              <th>Since</th>
              <th>
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((s) => (
              <tr key={s.id}>
                <td>{s.kind === "webhook" ? <code>{s.url}</code> : s.email}</td>
                <td>
                  <StatusBadge status={s.status} />
                </td>
                <td>{formatTime(s.confirmedAt ?? s.createdAt)}</td>
                <td>
                  <ConfirmButton
                    label={`Remove ${s.email ?? s.url}`}
                    confirmLabel="Yes, remove"
                    busy={act.busy}
                    onConfirm={() =>
                      act
                        .run(() =>
                          api.subscribers.deletePageSubscriber({
                            projectId: props.projectId,
                            pageId: props.page.id,
                            subscriberId: s.id,
                          }),
                        )
                        .then((r) => r && list.reload())
                    }
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form
        class="subscriber-add"
        onSubmit={(e) => {
          e.preventDefault();
          void add
            .run(() => api.subscribers.createPageSubscriber({ projectId: props.projectId, pageId: props.page.id, url }))
            .then((r) => {
              if (!r?.data) return;
              setCreated({ url: r.data.url, secret: r.data.secret });
              setUrl("");
              list.reload();
            });
        }}
      >
        <Field
          label="Webhook subscriber URL"
          type="url"
          required
          value={url}
          field="url"
          error={add.error}
          hint="Receives this page's notices as signed JSON."
          onValue={setUrl}
        />
        <ErrorMessage error={add.error} />
        <Button type="submit" busy={add.busy}>
          Add webhook subscriber
        </Button>
      </form>
    </section>
  );
}
