// The documented request formats the local receivers of the Slack and PagerDuty tests check, so a
// message that the real service would refuse is refused here too (the receivers answer as those
// services do: Slack 400 `invalid_blocks`, PagerDuty 400 `invalid event`). Each checker returns the
// problems it found (none: valid).
//
// Slack incoming webhooks (Slack's docs: "Sending messages using incoming webhooks", Block Kit
// reference "Blocks" and "Composition objects", "Message attachments"): a JSON object with `text`,
// `blocks` and/or `attachments`; an attachment's `color` is a hex colour or good|warning|danger and
// may carry `blocks`; at most 50 blocks; header: plain_text of 1-150; section: `text` (mrkdwn or
// plain_text, 1-3000) and/or `fields` (1-10 text objects of 1-2000); actions: 1-25 elements, a button
// with plain_text of 1-75, `url` up to 3000, `action_id` up to 255; context: 1-10 text or image
// elements; `block_id` up to 255.
//
// PagerDuty Events API v2 (developer docs: "Send an Alert Event", POST /v2/enqueue): `routing_key`
// (32 characters), `event_action` trigger|acknowledge|resolve, `dedup_key` (up to 255; required to
// acknowledge or resolve); a trigger's `payload` has `summary` (1-1024), `source` (non-empty),
// `severity` critical|error|warning|info, and optional `timestamp` (ISO 8601), `component`, `group`,
// `class` (strings) and `custom_details` (an object); optional `links` [{href, text?}], `images`,
// `client`, `client_url`.

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const isString = (v: unknown): v is string => typeof v === "string";

function textObject(v: unknown, at: string, max: number, kinds: string[], out: string[]): void {
  if (!isObject(v)) return void out.push(`${at}: not a text object`);
  if (!kinds.includes(String(v.type))) out.push(`${at}.type: ${String(v.type)} is not one of ${kinds.join("|")}`);
  if (!isString(v.text) || v.text.length < 1 || v.text.length > max)
    out.push(
      `${at}.text: must be a string of 1-${max} characters (${isString(v.text) ? v.text.length : typeof v.text})`,
    );
  if (v.emoji !== undefined && (typeof v.emoji !== "boolean" || v.type !== "plain_text"))
    out.push(`${at}.emoji: only a boolean on plain_text`);
}

function block(b: unknown, at: string, out: string[]): void {
  if (!isObject(b)) return void out.push(`${at}: not an object`);
  if (b.block_id !== undefined && (!isString(b.block_id) || b.block_id.length > 255))
    out.push(`${at}.block_id: at most 255 characters`);
  switch (b.type) {
    case "header":
      return textObject(b.text, `${at}.text`, 150, ["plain_text"], out);
    case "section": {
      if (b.text === undefined && b.fields === undefined) out.push(`${at}: needs text or fields`);
      if (b.text !== undefined) textObject(b.text, `${at}.text`, 3000, ["mrkdwn", "plain_text"], out);
      if (b.fields !== undefined) {
        if (!Array.isArray(b.fields) || b.fields.length < 1 || b.fields.length > 10)
          return void out.push(`${at}.fields: 1-10 text objects`);
        b.fields.forEach((f, i) => textObject(f, `${at}.fields[${i}]`, 2000, ["mrkdwn", "plain_text"], out));
      }
      return;
    }
    case "actions": {
      if (!Array.isArray(b.elements) || b.elements.length < 1 || b.elements.length > 25)
        return void out.push(`${at}.elements: 1-25 elements`);
      b.elements.forEach((e, i) => {
        const eat = `${at}.elements[${i}]`;
        if (!isObject(e) || e.type !== "button") return void out.push(`${eat}: expected a button`);
        textObject(e.text, `${eat}.text`, 75, ["plain_text"], out);
        if (e.url !== undefined && (!isString(e.url) || e.url.length > 3000 || !/^https?:\/\//.test(e.url)))
          out.push(`${eat}.url: an http(s) URL of at most 3000 characters`);
        if (e.action_id !== undefined && (!isString(e.action_id) || e.action_id.length > 255))
          out.push(`${eat}.action_id: at most 255 characters`);
      });
      return;
    }
    case "context": {
      if (!Array.isArray(b.elements) || b.elements.length < 1 || b.elements.length > 10)
        return void out.push(`${at}.elements: 1-10 elements`);
      b.elements.forEach((e, i) =>
        isObject(e) && e.type === "image"
          ? undefined
          : textObject(e, `${at}.elements[${i}]`, 3000, ["mrkdwn", "plain_text"], out),
      );
      return;
    }
    case "divider":
      return;
    default:
      out.push(`${at}.type: unknown block type ${String(b.type)}`);
  }
}

function blocks(v: unknown, at: string, out: string[]): number {
  if (!Array.isArray(v)) return (void out.push(`${at}: must be an array`), 0);
  v.forEach((b, i) => block(b, `${at}[${i}]`, out));
  return v.length;
}

/** Problems of a Slack incoming-webhook message. */
export function slackProblems(m: unknown): string[] {
  const out: string[] = [];
  if (!isObject(m)) return ["the body is not a JSON object"];
  if (m.text === undefined && m.blocks === undefined && m.attachments === undefined)
    out.push("needs text, blocks or attachments");
  if (m.text !== undefined && (!isString(m.text) || m.text.length > 40_000)) out.push("text: a string up to 40000");
  let n = m.blocks === undefined ? 0 : blocks(m.blocks, "blocks", out);
  if (m.attachments !== undefined) {
    if (!Array.isArray(m.attachments)) out.push("attachments: must be an array");
    else
      m.attachments.forEach((a, i) => {
        const at = `attachments[${i}]`;
        if (!isObject(a)) return void out.push(`${at}: not an object`);
        if (a.color !== undefined && !(isString(a.color) && /^(#[0-9a-fA-F]{6}|good|warning|danger)$/.test(a.color)))
          out.push(`${at}.color: a hex colour or good|warning|danger`);
        if (a.fallback !== undefined && !isString(a.fallback)) out.push(`${at}.fallback: a string`);
        if (a.blocks !== undefined) n += blocks(a.blocks, `${at}.blocks`, out);
      });
  }
  if (n > 50) out.push(`at most 50 blocks (${n})`);
  return out;
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Problems of a PagerDuty Events API v2 event. */
export function pagerDutyProblems(e: unknown): string[] {
  const out: string[] = [];
  if (!isObject(e)) return ["the body is not a JSON object"];
  if (!isString(e.routing_key) || e.routing_key.length !== 32) out.push("routing_key: 32 characters");
  if (!["trigger", "acknowledge", "resolve"].includes(String(e.event_action)))
    out.push("event_action: trigger|acknowledge|resolve");
  if (e.dedup_key !== undefined && (!isString(e.dedup_key) || e.dedup_key.length > 255))
    out.push("dedup_key: a string up to 255");
  if (e.event_action !== "trigger" && !isString(e.dedup_key)) out.push("dedup_key: required to acknowledge or resolve");
  if (e.event_action === "trigger") {
    const p = e.payload;
    if (!isObject(p)) out.push("payload: required for a trigger");
    else {
      if (!isString(p.summary) || p.summary.length < 1 || p.summary.length > 1024)
        out.push("payload.summary: 1-1024 characters");
      if (!isString(p.source) || p.source.length < 1) out.push("payload.source: required");
      if (!["critical", "error", "warning", "info"].includes(String(p.severity)))
        out.push("payload.severity: critical|error|warning|info");
      if (p.timestamp !== undefined && !(isString(p.timestamp) && ISO_8601.test(p.timestamp)))
        out.push("payload.timestamp: ISO 8601");
      for (const k of ["component", "group", "class"])
        if (p[k] !== undefined && !isString(p[k])) out.push(`payload.${k}: a string`);
      if (p.custom_details !== undefined && !isObject(p.custom_details)) out.push("payload.custom_details: an object");
    }
  }
  if (e.links !== undefined) {
    if (!Array.isArray(e.links)) out.push("links: an array");
    else
      e.links.forEach((l, i) => {
        if (!isObject(l) || !isString(l.href)) out.push(`links[${i}].href: required`);
        else if (l.text !== undefined && !isString(l.text)) out.push(`links[${i}].text: a string`);
      });
  }
  for (const k of ["client", "client_url"]) if (e[k] !== undefined && !isString(e[k])) out.push(`${k}: a string`);
  return out;
}
