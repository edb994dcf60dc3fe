import type { Envelope } from "./envelope.js";
import { badUrl, jsonTarget } from "./http-post.js";
import type { Links } from "./links.js";
import type { WebhookTarget } from "./target.js";

// The base of the Slack-compatible incoming webhooks (`slack`, `mattermost`): a JSON message POSTed
// to the hook URL, unsigned (the URL is the credential), the colour bar of an attachment by state,
// the hook URL's path checked (the host is any public one: self-hosted servers, proxies), the
// receiver's 429/503 Retry-After honoured, links when PUBLIC_URL is set. Each flavour lays out its
// own message (slack.ts: Block Kit; mattermost.ts: attachment fields).

/** The colour of a message by what it says (summary.ts `kind`). */
export const CHAT_COLORS = { started: "#e5484d", recovered: "#30a46c", event: "#5b5bd6" } as const;

export function slackCompatibleTarget<M>(spec: {
  /** The incoming-webhook URL's path. */
  hookPath: RegExp;
  /** What the 400 on `url` says the URL must be. */
  hookHint: string;
  message(env: Envelope, links: Links): M;
}): WebhookTarget {
  return jsonTarget({
    signed: false,
    links: true,
    checkUrl(url) {
      if (!spec.hookPath.test(url.pathname)) badUrl(`must be ${spec.hookHint}`);
    },
    body: (env, links) => JSON.stringify(spec.message(env, links)),
  });
}
