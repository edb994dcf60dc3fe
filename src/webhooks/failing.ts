import type { Logger } from "pino";
import type { Queryable } from "../storage/db.js";
import type { OpenChannels } from "./channels.js";
import * as store from "./store.js";
import type { MailMessage } from "./targets/mailer.js";

// Disabling a webhook whose deliveries have all failed for WEBHOOK_DISABLE_AFTER_DAYS (decisions.md
// "Notification channels and webhook management"). Each attempt's outcome moves the webhook's
// failing streak (`failing_since`: the first failure after its last success; a success clears it;
// only a change writes). A failure once the streak is that old disables the webhook
// (`enabled: false`, `disabledReason: "failing"`), pauses its unfinished deliveries, tells every
// node, and, with SMTP_URL set, mails the project's owners through the email channel's transport.
// Both runners call `noteOutcomes` after recording their attempts; enabling the webhook again
// clears the reason and the streak (store.ts updateWebhook).

export interface FailingDeps {
  db: Queryable;
  channels: OpenChannels;
  log: Logger;
  /** WEBHOOK_DISABLE_AFTER_DAYS in ms. */
  disableAfterMs: number;
  publicUrl?: string;
}

/** Attempt outcomes of one pass (several per webhook allowed): disables those failing for long enough. */
export async function noteOutcomes(
  deps: FailingDeps,
  outcomes: { webhookId: string; ok: boolean }[],
  now: Date,
): Promise<void> {
  if (outcomes.length === 0) return;
  const disabled = await store.noteOutcomes(deps.db, outcomes, now, new Date(now.getTime() - deps.disableAfterMs));
  for (const w of disabled) {
    await store.setDeliveriesPaused(deps.db, w.id, true, now);
    await store.notifyChanged(deps.db, w.project_id);
    deps.log.warn({ webhookId: w.id, projectId: w.project_id }, "webhooks: disabled after failing for days");
    const owners = await store.ownerEmails(deps.db, w.project_id);
    // A mail that fails is logged, never retried: the dashboard shows the reason anyway.
    const reply = owners.length ? await deps.channels.mail(disabledMail(w, owners, deps)) : undefined;
    if (reply && !reply.ok)
      deps.log.warn({ webhookId: w.id, error: reply.error }, "webhooks: disabled-webhook mail failed");
  }
}

function disabledMail(w: store.DisabledWebhook, to: string[], deps: FailingDeps): MailMessage {
  const days = deps.disableAfterMs / 86_400_000;
  const link = deps.publicUrl
    ? `${deps.publicUrl}/projects/${encodeURIComponent(w.project_id)}/webhooks/${encodeURIComponent(w.id)}`
    : undefined;
  const name = w.name.replace(/[\r\n\t]+/g, " ").slice(0, 200);
  const why = `Every delivery of the webhook "${name}" has failed for ${days} day${days === 1 ? "" : "s"}, so Vigil disabled it.`;
  const what = "New events create no deliveries for it and its unfinished ones are paused until you enable it again.";
  const esc = (s: string) =>
    s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  return {
    to,
    subject: `[Vigil] Webhook "${name}" disabled: failing for ${days} day${days === 1 ? "" : "s"}`,
    text: [why, "", what, "", `Destination: ${w.destination}`, ...(link ? ["", `Open it in Vigil: ${link}`] : [])].join(
      "\n",
    ),
    html: [
      `<!doctype html><html><body style="font-family:system-ui,sans-serif">`,
      `<p>${esc(why)}</p><p>${esc(what)}</p><p>Destination: <code>${esc(w.destination)}</code></p>`,
      link ? `<p><a href="${esc(link)}">Open it in Vigil</a></p>` : "",
      `</body></html>`,
    ].join(""),
    headers: { "X-Vigil-Webhook-Id": w.id, "X-Vigil-Event-Type": "webhook.disabled" },
  };
}
