import { jsonTarget } from "./http-post.js";
import { SIGNATURE_HEADER, signatureHeader } from "./signature.js";

// `http`: the envelope itself as the JSON body (decisions.md: Webhooks), signed with the webhook's
// secret (X-Vigil-Signature, signature.ts; during a rotation's overlap by the old one too), with the event and delivery ids as headers, to any
// http: or https: URL of a public host (the shared rules of http-post.ts).

export const httpTarget = jsonTarget({
  signed: true,
  body: (env) => JSON.stringify(env),
  headers({ env, eventId, body, secret, previousSecret, now }) {
    const h: Record<string, string> = { "x-vigil-event-id": eventId, "x-vigil-delivery-id": env.id };
    if (secret) h[SIGNATURE_HEADER] = signatureHeader(secret, body, Math.floor(now.getTime() / 1000), previousSecret);
    return h;
  },
});
