import type { ComponentChildren, JSX } from "preact";
import { useEffect, useId, useRef, useState } from "preact/hooks";
import { errorText, fieldErrors } from "../api.js";

// The dashboard's building blocks: every screen uses these, so buttons, fields, errors and empty
// states look and behave the same everywhere (labelled controls, errors announced, keyboard first).

type ButtonProps = Omit<JSX.ButtonHTMLAttributes<HTMLButtonElement>, "type"> & {
  variant?: "primary" | "secondary" | "danger" | "link";
  busy?: boolean;
  type?: "button" | "submit";
};

export function Button({
  variant = "secondary",
  busy,
  disabled,
  type = "button",
  children,
  class: cls,
  ...rest
}: ButtonProps) {
  return (
    <button
      {...rest}
      type={type}
      class={`btn btn-${variant}${cls ? ` ${cls}` : ""}`}
      disabled={disabled || busy}
      aria-busy={busy || undefined}
    >
      {children}
    </button>
  );
}

/** The page's title row: a heading, an optional line under it, and the actions at the right. */
export function PageHeader(props: {
  title: ComponentChildren;
  subtitle?: ComponentChildren;
  actions?: ComponentChildren;
}) {
  return (
    <header class="page-header">
      <div>
        <h1>{props.title}</h1>
        {props.subtitle && <p class="muted">{props.subtitle}</p>}
      </div>
      {props.actions && <div class="actions">{props.actions}</div>}
    </header>
  );
}

/** A failure, in words, announced to screen readers. `error` may be an exception or text. */
export function ErrorMessage({ error }: { error: unknown }) {
  if (error === undefined || error === null || error === "") return null;
  return (
    <div class="error" role="alert">
      {typeof error === "string" ? error : errorText(error)}
    </div>
  );
}

/** What a new user should do next, where a list is empty. */
export function Empty(props: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <h2>{props.title}</h2>
      {props.children}
    </div>
  );
}

export const Loading = ({ label = "Loading…" }: { label?: string }) => (
  <p class="loading" role="status">
    {label}
  </p>
);

type InputProps = JSX.InputHTMLAttributes<HTMLInputElement> & {
  label: string;
  /** The request field this input fills: its validation error (BadRequest) shows under it. */
  field?: string;
  error?: unknown;
  hint?: ComponentChildren;
  onValue?: (value: string) => void;
};

/** A labelled input whose validation error (from the server's field violations) is read with it. */
export function Field({ label, field, error, hint, onValue, ...rest }: InputProps) {
  const id = useId();
  const message = field ? fieldErrors(error)[field] : undefined;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        {...rest}
        aria-invalid={message ? true : undefined}
        aria-describedby={message || hint ? `${id}-note` : undefined}
        onInput={(e) => onValue?.((e.target as HTMLInputElement).value)}
      />
      {(message || hint) && (
        <small id={`${id}-note`} class={message ? "field-error" : "muted"}>
          {message ?? hint}
        </small>
      )}
    </div>
  );
}

export function Select<T extends string>(props: {
  label: string;
  value: T;
  options: readonly (T | { value: T; label: string })[];
  onValue: (value: T) => void;
  hideLabel?: boolean;
  name?: string;
}) {
  const id = useId();
  return (
    <div class={`field${props.hideLabel ? " field-inline" : ""}`}>
      <label for={id} class={props.hideLabel ? "visually-hidden" : undefined}>
        {props.label}
      </label>
      <select
        id={id}
        name={props.name}
        value={props.value}
        onChange={(e) => props.onValue((e.target as HTMLSelectElement).value as T)}
      >
        {props.options.map((o) => {
          const { value, label } = typeof o === "string" ? { value: o, label: o } : o;
          return (
            <option key={value} value={value}>
              {label}
            </option>
          );
        })}
      </select>
    </div>
  );
}

/** Copies `text`; says "Copied" for two seconds. */
export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <Button
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
        } catch {
          // Insecure contexts (plain http on another host) have no clipboard: select for Ctrl+C.
          const range = document.createRange();
          const node = document.querySelector(`[data-copy="${CSS.escape(text)}"]`);
          if (node) {
            range.selectNodeContents(node);
            getSelection()?.removeAllRanges();
            getSelection()?.addRange(range);
          }
        }
        setDone(true);
        setTimeout(() => setDone(false), 2000);
      }}
    >
      {done ? "Copied" : label}
    </Button>
  );
}

/**
 * A secret shown once (an API key, a webhook signing secret): copy it now, it is not shown again.
 * `kept` says what Vigil keeps: an API key's hash only; a signing secret itself (it signs with it).
 */
export function SecretOnce(props: {
  title: string;
  secret: string;
  kept: "hash" | "secret";
  children?: ComponentChildren;
  onDone: () => void;
}) {
  return (
    <section class="secret" aria-labelledby="secret-title">
      <h2 id="secret-title">{props.title}</h2>
      <p>
        {props.kept === "hash"
          ? "Copy it now: Vigil stores only a hash and will not show it again."
          : "Copy it now: Vigil keeps it to sign each delivery, but will not show it again."}
      </p>
      <div class="secret-row">
        <code data-copy={props.secret} data-testid="secret">
          {props.secret}
        </code>
        <CopyButton text={props.secret} />
      </div>
      {props.children}
      <Button variant="primary" onClick={props.onDone}>
        Done
      </Button>
    </section>
  );
}

/** A destructive action asked twice: the first press turns into "Confirm" and "Cancel". */
export function ConfirmButton(props: {
  label: string;
  confirmLabel?: string;
  onConfirm: () => void | Promise<void>;
  busy?: boolean;
  variant?: "danger" | "secondary";
}) {
  const [asking, setAsking] = useState(false);
  const confirm = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) confirm.current?.focus();
  }, [asking]);
  if (!asking)
    return (
      <Button variant={props.variant ?? "danger"} onClick={() => setAsking(true)}>
        {props.label}
      </Button>
    );
  return (
    <span class="confirm">
      <button
        ref={confirm}
        type="button"
        class="btn btn-danger"
        disabled={props.busy}
        onClick={async () => {
          await props.onConfirm();
          setAsking(false);
        }}
      >
        {props.confirmLabel ?? `Yes, ${props.label.toLowerCase()}`}
      </button>
      <Button onClick={() => setAsking(false)}>Cancel</Button>
    </span>
  );
}

/** A status word as a coloured pill: up/ok/operational/succeeded green, down/firing/failed/timed_out red, others grey. */
export function StatusBadge({ status }: { status: string }) {
  const tone = /^(up|ok|operational|active|succeeded|success|delivered|enabled|published|resolved)$/.test(status)
    ? "good"
    : /^(down|firing|failed|failure|timed_out|open|disabled|revoked)$/.test(status)
      ? "bad"
      : /^(degraded|pending|retrying|running|paused)$/.test(status)
        ? "warn"
        : "neutral";
  return <span class={`badge badge-${tone}`}>{status}</span>;
}

/**
 * Monitors as checkboxes, the ids `chosen` (a maintenance window's, an incident's affected ones),
 * with the `monitorIds` error of the request under them.
 */
export function MonitorChecklist(props: {
  legend: string;
  monitors: { id: string; name: string }[];
  chosen: string[];
  onChosen: (ids: string[]) => void;
  error: unknown;
  class?: string;
  empty?: string;
  disabled?: boolean;
}) {
  const message = fieldErrors(props.error).monitorIds;
  return (
    <fieldset class={props.class} disabled={props.disabled}>
      <legend>{props.legend}</legend>
      {props.monitors.length === 0 && props.empty && <p class="muted">{props.empty}</p>}
      {props.monitors.map((m) => (
        <label key={m.id} class="check">
          <input
            type="checkbox"
            checked={props.chosen.includes(m.id)}
            onChange={(e) =>
              props.onChosen(
                (e.target as HTMLInputElement).checked
                  ? [...props.chosen, m.id]
                  : props.chosen.filter((x) => x !== m.id),
              )
            }
          />{" "}
          {m.name}
        </label>
      ))}
      {message && <small class="field-error">{message}</small>}
    </fieldset>
  );
}
