import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { AlertService } from "../../gen/vigil/v1/alerts_pb.js";
import { AnalyticsService } from "../../gen/vigil/v1/analytics_pb.js";
import { AuthService } from "../../gen/vigil/v1/auth_pb.js";
import { EventService } from "../../gen/vigil/v1/events_pb.js";
import { IdentityService } from "../../gen/vigil/v1/identity_pb.js";
import { JobsService } from "../../gen/vigil/v1/jobs_pb.js";
import { MetricsService } from "../../gen/vigil/v1/metrics_pb.js";
import { PageService, PageSubscriberService } from "../../gen/vigil/v1/pages_pb.js";
import { ProjectService } from "../../gen/vigil/v1/projects_pb.js";
import { UptimeService } from "../../gen/vigil/v1/uptime_pb.js";
import { WebhookService } from "../../gen/vigil/v1/webhooks_pb.js";

// The dashboard talks to Vigil through the same RPCs as every client (proto/vigil/v1, the
// generated code in gen/), over the Connect protocol on the page's own origin: the session cookie
// (HttpOnly, SameSite=Lax) goes with every call, and the gate's same-origin rule lets it write.

/** Calls answering "not signed in" (a session that expired or was logged out elsewhere). */
const signedOut = new Set<() => void>();
export const onSignedOut = (f: () => void) => {
  signedOut.add(f);
  return () => signedOut.delete(f);
};

const watchSession: Interceptor = (next) => async (req) => {
  try {
    return await next(req);
  } catch (err) {
    if (err instanceof ConnectError && err.code === Code.Unauthenticated && req.method.name !== "Login")
      for (const f of signedOut) f();
    throw err;
  }
};

const transport = createConnectTransport({
  baseUrl: location.origin,
  useBinaryFormat: true,
  interceptors: [watchSession],
  fetch: (input, init) => globalThis.fetch(input, { ...init, credentials: "same-origin" }),
});

export const api = {
  auth: createClient(AuthService, transport),
  projects: createClient(ProjectService, transport),
  events: createClient(EventService, transport),
  analytics: createClient(AnalyticsService, transport),
  identity: createClient(IdentityService, transport),
  jobs: createClient(JobsService, transport),
  metrics: createClient(MetricsService, transport),
  uptime: createClient(UptimeService, transport),
  alerts: createClient(AlertService, transport),
  webhooks: createClient(WebhookService, transport),
  pages: createClient(PageService, transport),
  subscribers: createClient(PageSubscriberService, transport),
};

/** What to tell a person about a failed call: the server's own message (decisions.md "Errors"). */
export function errorText(err: unknown): string {
  if (err instanceof ConnectError) {
    if (err.code === Code.Unavailable || (err.code === Code.Unknown && !err.rawMessage))
      return "Vigil could not be reached. Check your connection and try again.";
    if (err.code === Code.Unauthenticated) return "Your session has ended. Sign in again.";
    if (err.code === Code.ResourceExhausted) return `Too many requests: ${err.rawMessage}`;
    return err.rawMessage || "The request failed.";
  }
  if (err instanceof TypeError) return "Vigil could not be reached. Check your connection and try again.";
  return err instanceof Error ? err.message : String(err);
}

/** The failed fields of a validation error (google.rpc.BadRequest field violations), by field path. */
export function fieldErrors(err: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!(err instanceof ConnectError) || err.code !== Code.InvalidArgument) return out;
  for (const d of err.findDetails(BadRequestSchema)) for (const v of d.fieldViolations) out[v.field] = v.description;
  return out;
}

export { Code, ConnectError };
