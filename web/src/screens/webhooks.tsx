import { useEffect, useId, useState } from "preact/hooks";
import { useLocation, useRoute } from "preact-iso";
import type {
  Delivery,
  DeliveryAttempt,
  Webhook,
  WebhookType,
  WebhookWithSecret,
} from "../../../gen/vigil/v1/webhooks_pb.js";
import { api, fieldErrors } from "../api.js";
import { useProject } from "../session.js";
import { useAction, useAsync, useInterval } from "../ui/hooks.js";
import {
  Button,
  ConfirmButton,
  Empty,
  ErrorMessage,
  Field,
  Loading,
  PageHeader,
  SecretOnce,
  Select,
  StatusBadge,
} from "../ui/kit.js";
import { formatDuration, formatTime, timeAgo } from "../ui/format.js";
import { FilterBuilder, filterFromValue, filterPatchValue, filterToValue, type Filter } from "../ui/filters.js";
import "./webhooks.css";

// Webhooks (docs/webhooks.md): the list with create, enable/disable and delete; a webhook's page
// with its settings, a test send and the delivery log (every attempt, retry of a failed delivery).
// The routes are for the project's owner and admins only: a member is told so and sees no controls.

/** Uptime's incident types (docs/webhooks.md), always offered next to the event types seen. */
const INCIDENT_TYPES = ["incident.started", "incident.recovered"];
/**
 * Words for the webhook types this dashboard knows. The list of types itself is the server's
 * (`WebhookService.ListWebhookTypes`, its table of targets): a type added there is offered here too,
 * under its name and the generic words of `wordsOf`.
 */
const KIND_WORDS: Record<string, { label: string; short: string; url: string; placeholder: string; hint: string }> = {
  http: {
    label: "HTTP endpoint (signed JSON POST)",
    short: "HTTP",
    url: "Endpoint URL",
    placeholder: "https://example.com/hooks/vigil",
    hint: "Vigil POSTs JSON here, signed with a secret shown once after creation.",
  },
  discord: {
    label: "Discord channel",
    short: "Discord",
    url: "Discord webhook URL",
    placeholder: "https://discord.com/api/webhooks/…",
    hint: "In Discord: channel settings → Integrations → Webhooks → Copy webhook URL. Deliveries are not signed.",
  },
  slack: {
    label: "Slack channel",
    short: "Slack",
    url: "Slack webhook URL",
    placeholder: "https://hooks.slack.com/services/T…/B…/…",
    hint: "In Slack: an app with Incoming Webhooks → Add New Webhook to Workspace, then copy its URL. Deliveries are not signed.",
  },
  mattermost: {
    label: "Mattermost channel",
    short: "Mattermost",
    url: "Mattermost webhook URL",
    placeholder: "https://mattermost.example.com/hooks/…",
    hint: "In Mattermost: Integrations → Incoming Webhooks → Add Incoming Webhook, then copy its URL. Deliveries are not signed.",
  },
  email: {
    label: "Email",
    short: "Email",
    url: "Recipients",
    placeholder: "oncall@example.com, ops@example.com",
    hint: "Up to 10 addresses, separated by commas: one message to all of them per notification.",
  },
  pagerduty: {
    label: "PagerDuty service",
    short: "PagerDuty",
    url: "Integration key",
    placeholder: "32 characters",
    hint: "In PagerDuty: the service → Integrations → Events API V2 → Integration Key. Incidents trigger and resolve alerts.",
  },
};

/** A destination as typed: a URL, a comma-separated list of addresses, or a key. */
function destinationOf(address: string, value: string): { url?: string; to?: string[]; routingKey?: string } {
  const v = value.trim();
  if (address === "to")
    return {
      to: v
        .split(/[,;\s]+/)
        .map((x) => x.trim())
        .filter(Boolean),
    };
  if (address === "routingKey") return { routingKey: v };
  return { url: v };
}

/** Where a webhook sends, as one line: its URL, its recipients, or its key's end. */
const destinationText = (w: Webhook) => w.url ?? (w.to.length ? w.to.join(", ") : (w.routingKey ?? ""));
/** The field a webhook's destination is edited in (the one its record carries). */
const addressOfHook = (w: Webhook) => (w.url !== undefined ? "url" : w.to.length ? "to" : "routingKey");
const wordsOf = (t: WebhookType) =>
  KIND_WORDS[t.type] ?? {
    label: t.type,
    short: t.type,
    url: "Webhook URL",
    placeholder: "https://…",
    hint: t.signed
      ? "Vigil POSTs JSON here, signed with a secret shown once after creation."
      : "Deliveries are not signed.",
  };
const MAX_EVENTS = 20;

function AdminsOnly() {
  return (
    <Empty title="Webhooks are managed by the project's owner and admins">
      <p class="muted">Ask one of them to add a webhook or to show you its delivery log.</p>
    </Empty>
  );
}

export function Webhooks() {
  const { project, canAdmin } = useProject();
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<WebhookWithSecret>();
  const list = useAsync(
    () => (canAdmin ? api.webhooks.listWebhooks({ projectId: project.id }).then((r) => r.data) : Promise.resolve([])),
    [project.id, canAdmin],
  );
  if (!canAdmin)
    return (
      <>
        <PageHeader title="Webhooks" subtitle="Send events and incidents to your own endpoint or a chat channel." />
        <AdminsOnly />
      </>
    );
  const hooks = list.data;
  return (
    <>
      <PageHeader
        title="Webhooks"
        subtitle="Send events and incidents to your own endpoint or a chat channel as they happen."
        actions={
          !creating &&
          !created && (
            <Button variant="primary" onClick={() => setCreating(true)}>
              New webhook
            </Button>
          )
        }
      />
      {created?.secret && (
        <SecretOnce
          title={`Signing secret of “${created.name}”`}
          secret={created.secret}
          kept="secret"
          onDone={() => setCreated(undefined)}
        >
          <p class="muted">
            Each delivery carries <code>X-Vigil-Signature: t=…,v1=…</code>, an HMAC-SHA256 of{" "}
            <code>t + "." + body</code> keyed by this secret. Check it with the SDK:{" "}
            <code>await verifyWebhook(rawBody, headers, secret)</code>.
          </p>
        </SecretOnce>
      )}
      {creating && (
        <WebhookForm
          projectId={project.id}
          onCancel={() => setCreating(false)}
          onCreated={(w) => {
            setCreating(false);
            setCreated(w.secret ? w : undefined);
            list.reload();
          }}
        />
      )}
      <ErrorMessage error={list.error} />
      {!hooks ? (
        list.loading && <Loading />
      ) : hooks.length === 0 ? (
        !creating && (
          <Empty title="No webhooks yet">
            <p class="muted">
              A webhook POSTs each event of the types you choose, and each incident of your monitors, to a URL of yours
              or to a chat channel (Discord, Mattermost).
            </p>
            <Button variant="primary" onClick={() => setCreating(true)}>
              Create a webhook
            </Button>
          </Empty>
        )
      ) : (
        <div class="table-wrap">
          <table class="webhooks">
            <thead>
              <tr>
                <th>Name</th>
                <th>Kind</th>
                <th>Event types</th>
                <th>State</th>
                <th>
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {hooks.map((w) => (
                <WebhookRow key={w.id} projectId={project.id} hook={w} onChanged={list.reload} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function WebhookRow({ projectId, hook, onChanged }: { projectId: string; hook: Webhook; onChanged: () => void }) {
  const act = useAction();
  return (
    <tr>
      <td>
        <a href={`/projects/${projectId}/webhooks/${hook.id}`}>{hook.name}</a>
        <div class="muted url">{destinationText(hook)}</div>
      </td>
      <td>{kindLabel(hook.type)}</td>
      <td>
        <EventChips events={hook.events} />
      </td>
      <td>
        <StatusBadge status={hook.enabled ? "enabled" : "disabled"} />
        {hook.disabledReason === "failing" && (
          <div class="muted" title={formatTime(hook.disabledAt)}>
            failing for days · disabled {timeAgo(hook.disabledAt)}
          </div>
        )}
      </td>
      <td class="row-actions">
        <Button
          busy={act.busy}
          aria-label={`${hook.enabled ? "Disable" : "Enable"} ${hook.name}`}
          onClick={() =>
            act
              .run(() => api.webhooks.updateWebhook({ projectId, webhookId: hook.id, enabled: !hook.enabled }))
              .then((r) => r && onChanged())
          }
        >
          {hook.enabled ? "Disable" : "Enable"}
        </Button>
        <ConfirmButton
          label="Delete"
          confirmLabel="Yes, delete it"
          busy={act.busy}
          onConfirm={() =>
            act.run(() => api.webhooks.deleteWebhook({ projectId, webhookId: hook.id })).then((r) => r && onChanged())
          }
        />
        <ErrorMessage error={act.error} />
      </td>
    </tr>
  );
}

const kindLabel = (type: string) => KIND_WORDS[type]?.short ?? type;

function EventChips({ events }: { events: string[] }) {
  return (
    <ul class="chips" aria-label="Event types">
      {events.map((e) => (
        <li key={e}>
          <code>{e}</code>
        </li>
      ))}
    </ul>
  );
}

/** The event types the project has seen (the last 30 days, most frequent first: ListFields). */
function useSeenTypes(projectId: string) {
  return useAsync(
    () => api.analytics.listFields({ projectId }).then((r) => (r.data?.types ?? []).map((t) => t.type)),
    [projectId],
  );
}

/**
 * Chooses the watched types: checkboxes for the types the project has seen and the incident
 * types, plus any other type typed in (one not seen yet is allowed).
 */
function EventPicker(props: { projectId: string; value: string[]; onValue: (v: string[]) => void; error?: string }) {
  const seen = useSeenTypes(props.projectId);
  const [other, setOther] = useState("");
  const otherId = useId();
  const offered = [...new Set([...(seen.data ?? []), ...INCIDENT_TYPES, ...props.value])];
  const toggle = (t: string, on: boolean) =>
    props.onValue(on ? [...props.value, t] : props.value.filter((x) => x !== t));
  const addOther = () => {
    const t = other.trim();
    if (t && !props.value.includes(t)) props.onValue([...props.value, t]);
    setOther("");
  };
  return (
    <fieldset class="event-picker" aria-describedby={`${otherId}-note`}>
      <legend>Event types</legend>
      {seen.loading && !seen.data && <Loading label="Loading the project's event types…" />}
      <ErrorMessage error={seen.error} />
      {seen.data && seen.data.length === 0 && (
        <p class="muted">This project has no events yet: choose incident types, or type an event type below.</p>
      )}
      <div class="event-options">
        {offered.map((t) => (
          <label key={t} class="check">
            <input
              type="checkbox"
              checked={props.value.includes(t)}
              onChange={(e) => toggle(t, (e.target as HTMLInputElement).checked)}
            />
            <code>{t}</code>
            {INCIDENT_TYPES.includes(t) && <span class="muted"> (uptime)</span>}
          </label>
        ))}
      </div>
      <div class="form-inline other-type">
        <div class="field">
          <label for={otherId}>Another event type</label>
          <input
            id={otherId}
            value={other}
            placeholder="e.g. order.paid"
            maxLength={200}
            onInput={(e) => setOther((e.target as HTMLInputElement).value)}
            onKeyDown={(e) => {
              if (e.key === "Enter") {
                e.preventDefault();
                addOther();
              }
            }}
          />
        </div>
        <Button onClick={addOther} disabled={!other.trim()}>
          Add type
        </Button>
      </div>
      <small id={`${otherId}-note`} class={props.error ? "field-error" : "muted"}>
        {props.error ?? `${props.value.length} of at most ${MAX_EVENTS} chosen.`}
      </small>
    </fieldset>
  );
}

/** Create a webhook: its kind, the fields that kind needs, the watched types. */
function WebhookForm(props: { projectId: string; onCancel: () => void; onCreated: (w: WebhookWithSecret) => void }) {
  const types = useAsync(() => api.webhooks.listWebhookTypes({}).then((r) => r.data), []);
  const [chosen, setKind] = useState<string>();
  // The server's first type is its default until one is chosen.
  const kind = types.data?.find((t) => t.type === chosen) ?? types.data?.[0];
  const words = kind && wordsOf(kind);
  const [name, setName] = useState("");
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<string[]>([]);
  const [filters, setFilters] = useState<Filter>();
  const [enabled, setEnabled] = useState(true);
  const act = useAction();
  const eventsError = fieldErrorsOf(act.error, "events");
  return (
    <form
      class="card webhook-form"
      aria-label="New webhook"
      onSubmit={async (e) => {
        e.preventDefault();
        const r = await act.run(() =>
          api.webhooks.createWebhook({
            projectId: props.projectId,
            type: kind?.type,
            name: name.trim() || undefined,
            ...destinationOf(kind?.address ?? "url", url),
            events,
            filters: filterToValue(filters),
            enabled,
          }),
        );
        if (r?.data) props.onCreated(r.data);
      }}
    >
      <h2>New webhook</h2>
      <div class="grid-2">
        {types.data && kind ? (
          <Select
            label="Kind"
            value={kind.type}
            options={types.data.map((t) => ({
              value: t.type,
              label: t.available ? wordsOf(t).label : `${wordsOf(t).label} (not set up on this server)`,
            }))}
            onValue={setKind}
          />
        ) : (
          <div class="field">{types.error ? <ErrorMessage error={types.error} /> : <Loading />}</div>
        )}
        <Field
          label="Name"
          value={name}
          onValue={setName}
          field="name"
          error={act.error}
          hint={kind?.address === "url" || !kind ? "Defaults to the URL's host." : undefined}
          maxLength={200}
        />
      </div>
      <Field
        label={words?.url ?? "Webhook URL"}
        value={url}
        onValue={setUrl}
        field={kind?.address ?? "url"}
        error={act.error}
        type={!kind || kind.address === "url" ? "url" : "text"}
        required
        placeholder={words?.placeholder}
        hint={words?.hint}
      />
      <EventPicker projectId={props.projectId} value={events} onValue={setEvents} error={eventsError} />
      <PayloadFilters projectId={props.projectId} value={filters} onValue={setFilters} error={act.error} />
      <label class="check">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled((e.target as HTMLInputElement).checked)} />{" "}
        Enabled (send deliveries as events arrive)
      </label>
      {!eventsError &&
        !fieldErrorsOf(act.error, kind?.address ?? "url") &&
        !fieldErrorsOf(act.error, "name") &&
        !fieldErrorsOf(act.error, "filters") && <ErrorMessage error={act.error} />}
      <div class="actions">
        <Button type="submit" variant="primary" busy={act.busy} disabled={events.length === 0 || !kind}>
          Create webhook
        </Button>
        <Button onClick={props.onCancel}>Cancel</Button>
      </div>
    </form>
  );
}

/**
 * Payload filters (docs/webhooks.md): only events that pass them are delivered; incidents are never
 * filtered. The analytics filter builder; "Apply filters" sets them, the form's button saves them.
 */
function PayloadFilters(props: {
  projectId: string;
  value: Filter | undefined;
  onValue: (f: Filter | undefined) => void;
  error: unknown;
}) {
  const message = fieldErrorsOf(props.error, "filters");
  return (
    <fieldset class="webhook-filters">
      <legend>Only events matching</legend>
      <p class="muted small">
        {props.value ? "Events that do not match are not delivered." : "Every event of the chosen types."} Incidents are
        always delivered.
      </p>
      <FilterBuilder projectId={props.projectId} value={props.value} onChange={props.onValue} />
      {message && <small class="field-error">{message}</small>}
    </fieldset>
  );
}

/** A validation error's message for `field` or one of its elements (`events[2]`). */
function fieldErrorsOf(err: unknown, field: string): string | undefined {
  const all = fieldErrors(err);
  const key = Object.keys(all).find((k) => k === field || k.startsWith(`${field}[`) || k.startsWith(`${field}.`));
  return key === undefined ? undefined : all[key];
}

// ---------------------------------------------------------------------------------------------
// One webhook: settings, test, delivery log.

const STATUSES = [
  { value: "", label: "All deliveries" },
  { value: "pending", label: "Pending" },
  { value: "retrying", label: "Retrying" },
  { value: "succeeded", label: "Succeeded" },
  { value: "abandoned", label: "Abandoned" },
] as const;
type StatusFilter = (typeof STATUSES)[number]["value"];
const PAGE_SIZE = 20;
const unfinished = (d: Delivery) => d.status === "pending" || d.status === "retrying";

export function WebhookDetail() {
  const { project, canAdmin } = useProject();
  const { params } = useRoute();
  const loc = useLocation();
  const webhookId = params.webhookId;
  const hook = useAsync(
    () =>
      canAdmin
        ? api.webhooks.getWebhook({ projectId: project.id, webhookId }).then((r) => r.data)
        : Promise.resolve(undefined),
    [project.id, webhookId, canAdmin],
  );
  const [secret, setSecret] = useState<string>();
  const [sent, setSent] = useState(0);
  const act = useAction();
  const back = (
    <a class="back" href={`/projects/${project.id}/webhooks`}>
      ← Webhooks
    </a>
  );
  if (!canAdmin)
    return (
      <>
        {back}
        <PageHeader title="Webhook" />
        <AdminsOnly />
      </>
    );
  const w = hook.data;
  if (!w)
    return (
      <>
        {back}
        {hook.error ? <ErrorMessage error={hook.error} /> : <Loading />}
      </>
    );
  const update = (patch: { enabled?: boolean; rotateSecret?: boolean }) =>
    act
      .run(() => api.webhooks.updateWebhook({ projectId: project.id, webhookId, ...patch }))
      .then((r) => {
        if (r?.data?.secret) setSecret(r.data.secret);
        if (r) hook.reload();
      });
  return (
    <>
      {back}
      <PageHeader
        title={
          <>
            {w.name} <StatusBadge status={w.enabled ? "enabled" : "disabled"} />
          </>
        }
        subtitle={
          <>
            {kindLabel(w.type)} webhook to <code class="url">{destinationText(w)}</code>
          </>
        }
        actions={
          <>
            <Button busy={act.busy} onClick={() => update({ enabled: !w.enabled })}>
              {w.enabled ? "Disable" : "Enable"}
            </Button>
            <ConfirmButton
              label="Delete webhook"
              busy={act.busy}
              onConfirm={async () => {
                const r = await act.run(() => api.webhooks.deleteWebhook({ projectId: project.id, webhookId }));
                if (r) loc.route(`/projects/${project.id}/webhooks`);
              }}
            />
          </>
        }
      />
      <ErrorMessage error={act.error} />
      {!w.enabled && (
        <div class="notice" role="status" aria-label="Why this webhook is disabled">
          <p>
            {w.disabledReason === "failing" ? (
              <>
                <strong>Disabled by Vigil since {formatTime(w.disabledAt)}</strong> ({timeAgo(w.disabledAt)}): every
                delivery failed for days. Fix the receiver (send a test), then enable it again. New
              </>
            ) : (
              <>Disabled{w.disabledAt ? ` since ${formatTime(w.disabledAt)}` : ""}: new</>
            )}{" "}
            events create no deliveries and unfinished ones are paused. Tests and retries are still sent.
          </p>
          <Button variant="primary" busy={act.busy} onClick={() => update({ enabled: true })}>
            Enable again
          </Button>
        </div>
      )}
      {secret && (
        <SecretOnce title="New signing secret" secret={secret} kept="secret" onDone={() => setSecret(undefined)} />
      )}
      <TestSend projectId={project.id} webhookId={webhookId} onSent={() => setSent(Date.now())} />
      <DeliveryLog projectId={project.id} webhookId={webhookId} sent={sent} />
      <Settings projectId={project.id} hook={w} onSaved={hook.reload} onRotate={() => update({ rotateSecret: true })} />
    </>
  );
}

function Settings(props: { projectId: string; hook: Webhook; onSaved: () => void; onRotate: () => void }) {
  const { hook } = props;
  const [name, setName] = useState(hook.name);
  const address = addressOfHook(hook);
  // A key is never shown whole: its field starts empty, and empty keeps it.
  const shown = (w: Webhook) => (address === "routingKey" ? "" : destinationText(w));
  const [url, setUrl] = useState(shown(hook));
  const [events, setEvents] = useState(hook.events);
  const [filters, setFilters] = useState(() => filterFromValue(hook.filters));
  const [saved, setSaved] = useState(false);
  const act = useAction();
  useEffect(() => {
    setName(hook.name);
    setUrl(shown(hook));
    setEvents(hook.events);
    setFilters(filterFromValue(hook.filters));
  }, [hook.id, hook.updatedAt]);
  return (
    <form
      class="card settings"
      aria-label="Settings"
      onSubmit={async (e) => {
        e.preventDefault();
        setSaved(false);
        const r = await act.run(() =>
          api.webhooks.updateWebhook({
            projectId: props.projectId,
            webhookId: hook.id,
            name: name.trim(),
            ...(address === "routingKey" && !url.trim() ? {} : destinationOf(address, url)),
            events,
            filters: filterPatchValue(filters, filterFromValue(hook.filters) !== undefined),
          }),
        );
        if (r) {
          setSaved(true);
          props.onSaved();
        }
      }}
    >
      <h2>Settings</h2>
      <Field label="Name" value={name} onValue={setName} field="name" error={act.error} maxLength={200} />
      <Field
        label={address === "url" ? "URL" : address === "to" ? "Recipients" : "Integration key"}
        value={url}
        onValue={setUrl}
        field={address}
        error={act.error}
        type={address === "url" ? "url" : "text"}
        required={address !== "routingKey"}
        hint={address === "routingKey" ? `Now ${hook.routingKey ?? ""}; leave empty to keep it.` : undefined}
      />
      <EventPicker
        projectId={props.projectId}
        value={events}
        onValue={setEvents}
        error={fieldErrorsOf(act.error, "events")}
      />
      <PayloadFilters projectId={props.projectId} value={filters} onValue={setFilters} error={act.error} />
      <ErrorMessage error={Object.keys(fieldErrors(act.error)).length ? undefined : act.error} />
      <div class="actions">
        <Button type="submit" variant="primary" busy={act.busy} disabled={events.length === 0}>
          Save
        </Button>
        {saved && (
          <span role="status" class="muted">
            Saved.
          </span>
        )}
        {hook.type === "http" && (
          <ConfirmButton
            label="Rotate secret"
            confirmLabel="Yes, make a new secret"
            variant="secondary"
            onConfirm={props.onRotate}
          />
        )}
      </div>
    </form>
  );
}

/** "Send a test": a `webhook.test` delivery, followed until it has an outcome, told in words. */
function TestSend(props: { projectId: string; webhookId: string; onSent: () => void }) {
  const { projectId, webhookId } = props;
  const [delivery, setDelivery] = useState<Delivery>();
  const act = useAction();
  const poll = delivery && unfinished(delivery) && delivery.attempts.length === 0;
  useInterval(
    () => {
      if (!delivery) return;
      api.webhooks
        .getDelivery({ projectId, webhookId, deliveryId: delivery.id })
        .then((r) => r.data && setDelivery(r.data))
        .catch(() => undefined);
    },
    poll ? 500 : undefined,
  );
  return (
    <section class="card test-send" aria-labelledby="test-title">
      <div class="test-row">
        <div>
          <h2 id="test-title">Send a test</h2>
          <p class="muted">
            Sends a <code>webhook.test</code> delivery now (even while the webhook is disabled); it appears in the log.
          </p>
        </div>
        <Button
          variant="primary"
          busy={act.busy || Boolean(poll)}
          onClick={async () => {
            setDelivery(undefined);
            const r = await act.run(() => api.webhooks.testWebhook({ projectId, webhookId }));
            if (r?.data) {
              setDelivery(r.data);
              props.onSent();
            }
          }}
        >
          Send a test
        </Button>
      </div>
      <ErrorMessage error={act.error} />
      {delivery && (
        <p role="status" class="test-result">
          {testResult(delivery)}
        </p>
      )}
    </section>
  );
}

function testResult(d: Delivery): string {
  const a = d.attempts.at(-1);
  if (!a) return "Test sent, waiting for the answer…";
  if (d.status === "succeeded")
    return `Test delivered: the endpoint answered ${a.statusCode} in ${formatDuration(a.durationMs)}.`;
  const why =
    a.statusCode !== undefined ? `the endpoint answered ${a.statusCode}` : a.error ? a.error : "no answer was received";
  return `Test failed: ${why} (after ${formatDuration(a.durationMs)}).${
    d.nextAttemptAt ? ` It will be retried ${timeAgo(d.nextAttemptAt)}.` : ""
  }`;
}

/**
 * The delivery log, newest first, PAGE_SIZE a page: refreshed every 2 s while one of its
 * deliveries is unfinished (so retries and their attempts appear), every 10 s on the first page
 * otherwise (new deliveries).
 */
function DeliveryLog({ projectId, webhookId, sent }: { projectId: string; webhookId: string; sent: number }) {
  const [status, setStatus] = useState<StatusFilter>("");
  // The cursors of the pages before the current one (the first page's is undefined).
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const [poke, setPoke] = useState(0);
  const page = useAsync(
    () =>
      api.webhooks.listDeliveries({
        projectId,
        webhookId,
        limit: PAGE_SIZE,
        status: status || undefined,
        cursor,
      }),
    [projectId, webhookId, status, cursor, sent],
  );
  const deliveries = page.data?.data;
  const active = Boolean(deliveries?.some(unfinished)) || Math.max(poke, sent) > Date.now() - 15_000;
  useInterval(page.reload, active ? 1000 : cursors.length === 1 ? 10_000 : undefined);
  return (
    <section aria-labelledby="log-title" class="delivery-log">
      <div class="log-header">
        <h2 id="log-title">Delivery log</h2>
        <div class="toolbar">
          <Select
            label="Show"
            hideLabel
            value={status}
            options={STATUSES}
            onValue={(v) => {
              setStatus(v);
              setCursors([undefined]);
            }}
          />
          <Button onClick={page.reload}>Refresh</Button>
        </div>
      </div>
      <ErrorMessage error={page.error} />
      {!deliveries ? (
        page.loading && <Loading />
      ) : deliveries.length === 0 ? (
        <Empty title={status ? `No ${status} deliveries` : "No deliveries yet"}>
          <p class="muted">
            Deliveries appear here when an event of a watched type arrives or an incident opens or closes. “Send a test”
            makes one now.
          </p>
        </Empty>
      ) : (
        <ol class="deliveries">
          {deliveries.map((d) => (
            <DeliveryItem
              key={d.id}
              projectId={projectId}
              webhookId={webhookId}
              delivery={d}
              onRetried={() => {
                setPoke(Date.now());
                page.reload();
              }}
            />
          ))}
        </ol>
      )}
      {(cursors.length > 1 || page.data?.pagination?.hasMore) && (
        <nav class="pager" aria-label="Delivery pages">
          <Button disabled={cursors.length === 1} onClick={() => setCursors((c) => c.slice(0, -1))}>
            ← Newer
          </Button>
          <span class="muted">Page {cursors.length}</span>
          <Button
            disabled={!page.data?.pagination?.hasMore}
            onClick={() => {
              const next = page.data?.pagination?.nextCursor;
              if (next) setCursors((c) => [...c, next]);
            }}
          >
            Older →
          </Button>
        </nav>
      )}
    </section>
  );
}

function DeliveryItem(props: { projectId: string; webhookId: string; delivery: Delivery; onRetried: () => void }) {
  const d = props.delivery;
  const act = useAction();
  const last = d.attempts.at(-1);
  const failed = d.status === "abandoned" || d.status === "retrying";
  return (
    <li class={`delivery delivery-${d.status}`} aria-label={`Delivery ${d.id}`}>
      <div class="delivery-head">
        <StatusBadge status={d.status} />
        <code class="event-type">{d.eventType}</code>
        <span class="muted" title={formatTime(d.createdAt)}>
          {formatTime(d.createdAt)}
        </span>
        <span class="muted">
          {d.attempts.length} attempt{d.attempts.length === 1 ? "" : "s"}
          {d.status === "retrying" && d.nextAttemptAt ? `, next ${timeAgo(d.nextAttemptAt)}` : ""}
          {d.status === "pending" && !last ? ", sending…" : ""}
        </span>
        <span class="spacer" />
        <code class="muted delivery-id">{d.id}</code>
        {failed && (
          <Button
            busy={act.busy}
            aria-label={`Retry delivery ${d.id}`}
            onClick={async () => {
              const r = await act.run(() =>
                api.webhooks.retryDelivery({
                  projectId: props.projectId,
                  webhookId: props.webhookId,
                  deliveryId: d.id,
                }),
              );
              if (r) props.onRetried();
            }}
          >
            Retry
          </Button>
        )}
      </div>
      <ErrorMessage error={act.error} />
      {d.attempts.length > 0 && <Attempts attempts={d.attempts} />}
    </li>
  );
}

function Attempts({ attempts }: { attempts: DeliveryAttempt[] }) {
  return (
    <div class="table-wrap">
      <table class="attempts">
        <thead>
          <tr>
            <th>#</th>
            <th>Time</th>
            <th>Answer</th>
            <th class="num">Duration</th>
            <th>Response</th>
          </tr>
        </thead>
        <tbody>
          {attempts.map((a, i) => {
            const ok = a.statusCode !== undefined && a.statusCode >= 200 && a.statusCode < 300;
            return (
              <tr key={i}>
                <td>{i + 1}</td>
                <td>{formatTime(a.at)}</td>
                <td>
                  {a.statusCode !== undefined ? (
                    <span class={`code ${ok ? "code-ok" : "code-bad"}`}>HTTP {a.statusCode}</span>
                  ) : (
                    <span class="code code-bad">no answer</span>
                  )}
                </td>
                <td class="num">{formatDuration(a.durationMs)}</td>
                <td class="response">
                  {a.error && a.error !== `HTTP ${a.statusCode}` && <div class="attempt-error">{a.error}</div>}
                  {a.responseBody ? <pre>{a.responseBody}</pre> : !a.error && <span class="muted">(empty body)</span>}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
