import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ScalarType, create, type DescMethod, type Message } from "@bufbuild/protobuf";
import { createContextValues, type HandlerContext } from "@connectrpc/connect";
import pino from "pino";
import type { Access, Principal } from "../auth/principal.js";
import { principalKey } from "../auth/principal.js";
import { parseConfig } from "../config/index.js";
import { createFeatures } from "../server/features.js";
import { isPublic } from "../server/gate.js";
import { INGEST_LIMITS } from "../server/ingest-routes.js";
import { clientInfoKey } from "../shared/context.js";
import type { Deps } from "../platform/deps.js";
import { ApiError } from "../shared/errors.js";
import { isStreaming, type ServiceBinding } from "../shared/feature.js";
import { IngestPressure } from "../shared/pressure.js";
import { Telemetry } from "../shared/telemetry.js";
import { BackgroundTasks } from "../shared/background.js";
import type { Notifications } from "../shared/notifications.js";
import { createPool } from "../storage/db.js";
import { restContext } from "../transcoding/context.js";

// Who may call each RPC, and which rate limits it counts against, derived from the code that
// serves it rather than listed by hand. The gate (src/server/gate.ts) decides public vs.
// credentials from `(vigil.v1.no_credentials)`; past the gate every handler starts by asking
// `deps.auth` for what it needs (architecture.md: "auth first"). So each handler is run once, on
// features built with stand-in dependencies, as an API-key caller: the first `deps.auth` call it
// makes is recorded and stops it. A second run lets auth pass and records the first rate limit the
// handler takes. Nothing reaches a database: every query throws.

export type CallerKind =
  /** `(vigil.v1.no_credentials)`: no credentials. */
  | "public"
  /** `deps.auth.project(ctx, id, "data")`: a project's secret API key or a member's session. */
  | "data"
  /** `deps.auth.project(ctx, id, "heartbeat")`: as `data`, or a ping key of the project. */
  | "heartbeat"
  /** `deps.auth.project(ctx, id, role)`: a session with at least that role in the project. */
  | "member"
  | "admin"
  | "owner"
  /** `deps.auth.session(ctx)` (or the handler refuses an API key itself): a signed-in session. */
  | "session"
  /** `deps.auth.ingestKey(ctx)`: a project API key only, secret or publishable. */
  | "apiKey"
  /** `deps.auth.pingKey(ctx, key)`: a ping key of a project, in the path (ping URLs). */
  | "pingKey"
  /** The gate's rule alone: any valid credentials. */
  | "credentials";

export interface RpcFacts {
  caller: CallerKind;
  /** Rate limits counted before the handler's own work (LimitName of src/shared/ratelimit.ts). */
  rateLimits: string[];
}

class Stop extends Error {}

/** Runs every handler of the served features and returns the facts per `Service/Method` (full names). */
export async function probeRpcs(): Promise<{ bindings: ServiceBinding[]; facts: Map<string, RpcFacts> }> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "vigil-openapi-"));
  const config = parseConfig({
    DATA_DIR: dataDir,
    SESSION_SECRET: "openapi-probe-secret-0123456789",
    LOG_LEVEL: "silent",
    METRICS_PORT: "off",
  });
  let phase: "auth" | "limits" = "auth";
  let seenAuth: CallerKind | undefined;
  let seenLimit: string | undefined;
  const apiKey: Principal = {
    kind: "apiKey",
    keyId: "key_probe",
    projectId: "prj_probe",
    environment: "production",
    keyKind: "secret",
    allowedOrigins: [],
  };
  const session: Principal = { kind: "session", accountId: "usr_probe", token: "probe" };
  const pass = (kind: CallerKind) => {
    seenAuth ??= kind;
    if (phase === "auth") throw new Stop();
  };
  const auth = {
    principal: async () => apiKey,
    fromHeaders: async () => apiKey,
    session: async () => (pass("session"), session),
    ingestKey: async () => (pass("apiKey"), { projectId: "prj_probe", principal: apiKey }),
    pingKey: async () => (pass("pingKey"), { projectId: "prj_probe", principal: apiKey }),
    project: async (_ctx: unknown, _id: string, access: Access) => (
      pass(access),
      {
        projectId: "prj_probe",
        principal: access === "data" || access === "heartbeat" ? apiKey : session,
        role: "owner",
      }
    ),
  };
  const limit = (name: string) => {
    seenLimit ??= name;
    throw new Stop();
  };
  const noDb = () => {
    throw new Stop();
  };
  // A real (never connected) pool, for what features read off it at construction; every use stops.
  const db = createPool("postgres://probe@127.0.0.1:1/probe", 1);
  db.query = noDb as never;
  db.connect = noDb as never;
  const log = pino({ level: "silent" });
  const telemetry = new Telemetry();
  // No LISTEN connection either: the probe has no database to connect to, and a real one would keep
  // retrying (and a feature's subscription waiting) for as long as the probe runs.
  const notifications: Notifications = {
    subscribe: () => ({ listening: Promise.resolve(), close: () => undefined }),
    stop: async () => undefined,
  };
  const deps = {
    config,
    db,
    log,
    clock: () => new Date(),
    telemetry,
    background: new BackgroundTasks(log, telemetry, { role: "all", temporal: false }),
    notifications,
    pressure: new IngestPressure(),
    limits: { take: limit, hit: limit, refund: noDb, close: async () => undefined, rules: {} },
    auth,
    sessionSecret: "openapi-probe-secret-0123456789",
    shutdownSignal: new AbortController().signal,
    temporal: undefined,
  } as unknown as Deps;

  const features = await createFeatures(deps);
  const bindings = features.flatMap((f) => f.services);
  const facts = new Map<string, RpcFacts>();
  try {
    for (const b of bindings) {
      for (const method of b.desc.methods) {
        const fn = b.impl[method.localName];
        if (!fn) continue;
        const run = async (p: "auth" | "limits", input = create(method.input)) => {
          phase = p;
          try {
            const out = fn(input, probeContext(b, method, apiKey));
            // A server stream runs (up to its auth, checks and first chunk) when it is first read.
            if (isStreaming(method)) await (out as AsyncIterable<unknown>)[Symbol.asyncIterator]().next();
            else await out;
            return undefined;
          } catch (err) {
            return err;
          }
        };
        seenAuth = undefined;
        seenLimit = undefined;
        const err = await run("auth");
        let caller: CallerKind;
        if (isPublic(method)) caller = "public";
        else if (seenAuth) caller = seenAuth;
        // The handler refused an API-key caller itself (e.g. logout reads the session cookie).
        else if (err instanceof ApiError && (err.status === 401 || err.status === 403)) caller = "session";
        else caller = "credentials";
        // Handlers may validate before they count: try an empty request, then one with an item in
        // every list, then also a plausible value in every string (an address passes both the
        // email and the minimum-length checks). The first limit counted is the route's.
        // The ingestion routes' limits are taken by the gate, before the body is read
        // (src/server/ingest-routes.ts INGEST_LIMITS); the others by their handlers.
        const gateLimit = INGEST_LIMITS.get(method);
        if (gateLimit) seenLimit = gateLimit;
        else
          for (const input of probeInputs(method)) {
            await run("limits", input);
            if (seenLimit) break;
          }
        facts.set(`${b.desc.typeName}/${method.name}`, { caller, rateLimits: seenLimit ? [seenLimit] : [] });
      }
    }
  } finally {
    for (const f of features) await f.stop?.().catch(() => undefined);
    await db.end().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
  return { bindings, facts };
}

function probeInputs(method: DescMethod): Message[] {
  const withLists = (strings: boolean) => {
    const m = create(method.input) as unknown as Record<string, unknown>;
    for (const f of method.input.fields) {
      if (f.oneof) continue;
      if (f.fieldKind === "list")
        m[f.localName] = [
          f.listKind === "message"
            ? create(f.message)
            : f.listKind === "scalar" && f.scalar === ScalarType.STRING
              ? PLAUSIBLE
              : 0,
        ];
      else if (strings && f.fieldKind === "scalar" && f.scalar === ScalarType.STRING) m[f.localName] = PLAUSIBLE;
    }
    return m as unknown as Message;
  };
  return [create(method.input), withLists(false), withLists(true)];
}

const PLAUSIBLE = "probe@example.com";

function probeContext(b: ServiceBinding, method: DescMethod, principal: Principal): HandlerContext {
  return restContext({
    service: b.desc,
    method,
    requestMethod: "POST",
    url: "http://vigil.local/probe",
    headers: { authorization: "Bearer vk_probe" },
    values: createContextValues()
      .set(clientInfoKey, { ip: "127.0.0.1", requestId: "probe" })
      .set(principalKey, principal),
  });
}
