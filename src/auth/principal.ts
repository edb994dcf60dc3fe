import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { Clock } from "../shared/clock.js";
import { ApiError, forbidden, notFound, unauthenticated } from "../shared/errors.js";
import { clientInfoKey } from "../shared/context.js";
import type { Db } from "../storage/db.js";
import { KeyLookup, type KeyRow } from "./key-lookup.js";
import { sha256Hex } from "../shared/ids.js";
import { assertNever } from "../shared/never.js";
import { accountForToken, tokenFromCookieHeader } from "./sessions.js";

// Who is calling, and what they may do in a project. The project always comes from the
// credentials (an API key's own project, or a membership of the session's account).

/** An API key's kind (the api_keys.kind column, read by key-lookup.ts). */
export type KeyKind = KeyRow["kind"];

export type Principal =
  | {
      kind: "apiKey";
      keyId: string;
      projectId: string;
      environment: string;
      /**
       * `publishable` (vk_pub_...): event ingestion only, from the project's allowed origins;
       * `ping` (vk_ping_...): heartbeats only, on the routes of access `heartbeat`.
       */
      keyKind: KeyKind;
      /** The project's allowed origins (publishable keys; empty: any origin), as of this request. */
      allowedOrigins: readonly string[];
    }
  | { kind: "session"; accountId: string; token: string };

/** What every other route answers a publishable key, over every protocol. */
export const PUBLISHABLE_ONLY_INGESTS =
  "a publishable key can only ingest events (POST /v1/events and /v1/events/batch): use a secret key on a server";

/** Publishable secrets begin with this; secret ones with `vk_` and a base62 character. */
export const PUBLISHABLE_PREFIX = "vk_pub_";

/** What every route but the heartbeat ones (access `heartbeat`) answers a ping key, over every protocol. */
const PING_ONLY_HEARTBEATS =
  "a ping key can only send heartbeats (POST /v1/projects/:projectId/heartbeats/:monitorSlug, or the ping URL /ping/:pingKey/:monitorSlug): use a secret key or a session for anything else";

const PING_URL_KEY_KIND =
  "only a ping key (vk_ping_...) may be used in a ping URL: a URL ends up in logs and shell histories, so revoke this key and create a ping key";

/** Ping secrets begin with this (the `_` after `ping` is not base62: no secret key begins so). */
export const PING_PREFIX = "vk_ping_";

/**
 * allowedOrigins, checked on the actual request (a preflight carries no key) for publishable keys
 * only: an `Origin` not in a non-empty list is refused. A request without `Origin` (not a browser,
 * or a browser that does not send it) is not subject to it: the list keeps other sites' pages from
 * using the key, it does not stop a non-browser client that copies it (docs/security.md).
 */
export function checkOrigin(p: Principal | undefined, origin: string | undefined): void {
  if (p?.kind !== "apiKey" || p.keyKind !== "publishable" || origin === undefined) return;
  if (p.allowedOrigins.length === 0 || p.allowedOrigins.includes(origin.toLowerCase())) return;
  throw new OriginRefused(p.projectId, origin);
}

/**
 * 403 for an origin not in the project's allowedOrigins: answered WITHOUT CORS headers. It names
 * the project and the origin for the server's log (the browser keeps the answer from the page).
 */
export class OriginRefused extends ApiError {
  readonly originRefused = true;
  constructor(
    readonly projectId: string,
    readonly origin: string,
  ) {
    super(403, "forbidden", "this origin is not in the project's allowedOrigins");
  }
}

/** (Not `instanceof`: ConnectError's Symbol.hasInstance answers true for every ConnectError.) */
export const isOriginRefused = (err: unknown): err is OriginRefused =>
  typeof err === "object" && err !== null && (err as Partial<OriginRefused>).originRefused === true;

type Role = "owner" | "admin" | "member";

/**
 * Route access levels, declared by each handler's `project(ctx, id, access)` call: the one place
 * that decides which key kinds a route takes (a new route declaring `data` or a role refuses ping
 * and publishable keys without a line of its own).
 * - `data`: secret API key of the project, or session of any member (project data reads and writes).
 * - `heartbeat`: as `data`, and also a ping key of the project (heartbeats and, later, run signals).
 * - `member` / `admin` / `owner`: session routes; API keys are refused with 403.
 */
export type Access = "data" | "heartbeat" | Role;

export interface ProjectScope {
  projectId: string;
  principal: Principal;
  role?: Role;
}

/**
 * The caller, resolved from the headers by the request gate (src/server/gate.ts) before the body
 * is read. Handlers reach it through `principal(ctx)`, which resolves it itself when unset.
 */
export const principalKey = createContextKey<Principal | undefined>(undefined);

/** The two request headers credentials travel in. */
export interface CredentialHeaders {
  get(name: "authorization" | "cookie"): string | null;
}

const rank: Record<Role, number> = { member: 1, admin: 2, owner: 3 };

/**
 * The access levels each key kind may use (sessions: by role). A table over every kind, so a new kind
 * does not compile until it is given its routes; a level not listed answers the kind 403.
 */
const ACCESS_OF_KEYS: Record<KeyKind, readonly Access[]> = {
  secret: ["data", "heartbeat"],
  // Event ingestion only (`ingestKey`, and the gate's BROWSER_INGEST).
  publishable: [],
  ping: ["heartbeat"],
};

/** The 403 message for a key of `kind` on a route it may not use. */
function refusalOf(kind: KeyKind, otherwise: string): string {
  switch (kind) {
    case "publishable":
      return PUBLISHABLE_ONLY_INGESTS;
    case "ping":
      return PING_ONLY_HEARTBEATS;
    case "secret":
      return otherwise;
    default:
      return assertNever(kind);
  }
}
const BEARER = /^Bearer\s+(\S+)$/i;

/** What the Authenticator reads: the database (keys, sessions, memberships), the clock, the cookie secret. */
export interface AuthenticatorDeps {
  db: Db;
  clock: Clock;
  sessionSecret: string;
}

export class Authenticator {
  private lastUsedWrites = new Map<string, number>();
  private readonly keys: KeyLookup;
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly sessionSecret: string;

  constructor(deps: AuthenticatorDeps) {
    this.db = deps.db;
    this.clock = deps.clock;
    this.sessionSecret = deps.sessionSecret;
    this.keys = new KeyLookup(deps.db);
  }

  /** Resolves the caller; 401 when credentials are missing, malformed, unknown or revoked. */
  async principal(ctx: HandlerContext): Promise<Principal> {
    return ctx.values.get(principalKey) ?? this.fromHeaders(ctx.requestHeader);
  }

  /** Resolves credentials from the headers alone (no body needed). */
  async fromHeaders(headers: CredentialHeaders): Promise<Principal> {
    const auth = headers.get("authorization");
    if (auth !== null) {
      const m = BEARER.exec(auth.trim());
      if (!m || !m[1].startsWith("vk_"))
        throw unauthenticated("malformed Authorization header: expected 'Bearer vk_...'");
      return this.apiKey(m[1]);
    }
    const token = tokenFromCookieHeader(headers.get("cookie"), this.sessionSecret);
    if (token === false) throw unauthenticated("invalid session");
    if (token === undefined)
      throw unauthenticated("missing credentials: send an API key (Authorization: Bearer vk_...) or a session cookie");
    const accountId = await accountForToken(this.db, token, this.clock());
    if (!accountId) throw unauthenticated("session expired or signed out");
    return { kind: "session", accountId, token };
  }

  /**
   * A publishable key given in the URL (`?key=vk_pub_...`, navigator.sendBeacon cannot set headers):
   * accepted on the browser ingestion routes only (the gate decides where). A secret key must not
   * travel in a URL (logs, proxies, browser history): refused before it is looked up.
   */
  async fromQueryKey(key: string): Promise<Principal> {
    if (!key.startsWith(PUBLISHABLE_PREFIX))
      throw unauthenticated(
        "only a publishable key (vk_pub_...) may be sent in the URL (?key=): a secret key must never travel in a URL; send it in the Authorization header",
      );
    const p = await this.apiKey(key);
    if (p.kind !== "apiKey" || p.keyKind !== "publishable") throw unauthenticated("unknown or revoked API key");
    return p;
  }

  async session(ctx: HandlerContext): Promise<Extract<Principal, { kind: "session" }>> {
    const p = await this.principal(ctx);
    if (p.kind !== "session")
      throw forbidden(refusalOf(p.keyKind, "this route needs a signed-in session, not an API key"));
    return p;
  }

  /**
   * A ping URL's key (`/ping/:pingKey/:monitorSlug`, curl from a crontab: no header). Looked up as
   * every key is (its hash, the same batched query): 401 when malformed, unknown or revoked; 403 for a
   * key of another kind (it must not travel in a URL: the message says to revoke it). The gate
   * resolves it over REST (before the body is read).
   */
  async fromPingKey(key: string): Promise<Principal> {
    if (!key.startsWith("vk_")) throw unauthenticated("malformed ping key: expected vk_ping_...");
    const principal = await this.apiKey(key);
    if (principal.kind !== "apiKey" || principal.keyKind !== "ping") throw forbidden(PING_URL_KEY_KIND);
    return principal;
  }

  /**
   * The ping URL handler's caller: the key the gate resolved from the path (REST), else the
   * request's `key` (gRPC, Connect), as `fromPingKey`; it is the caller for the rest of the request.
   */
  async pingKey(ctx: HandlerContext, key: string): Promise<ProjectScope> {
    const principal = ctx.values.get(principalKey) ?? (await this.fromPingKey(key));
    if (principal.kind !== "apiKey" || principal.keyKind !== "ping") throw forbidden(PING_URL_KEY_KIND);
    ctx.values.set(principalKey, principal);
    ctx.values.get(clientInfoKey).projectId = principal.projectId;
    return { projectId: principal.projectId, principal };
  }

  private async apiKey(secret: string): Promise<Principal> {
    const row = await this.keys.find(sha256Hex(secret));
    if (!row) throw unauthenticated("unknown or revoked API key");
    this.touch(row.id);
    return {
      kind: "apiKey",
      keyId: row.id,
      projectId: row.project_id,
      environment: row.environment,
      keyKind: row.kind,
      allowedOrigins: row.allowed_origins,
    };
  }

  /** Records last use at most once a minute per key, off the request path. */
  private touch(keyId: string): void {
    const now = this.clock();
    const last = this.lastUsedWrites.get(keyId) ?? 0;
    if (now.getTime() - last < 60_000) return;
    this.lastUsedWrites.set(keyId, now.getTime());
    this.db.query("UPDATE api_keys SET last_used_at = $2 WHERE id = $1", [keyId, now]).catch(() => undefined);
  }

  /** Authorizes the caller for `projectIdParam` (may be `self` with an API key). */
  async project(ctx: HandlerContext, projectIdParam: string, access: Access): Promise<ProjectScope> {
    const scope = await this.resolveProject(ctx, projectIdParam, access);
    ctx.values.get(clientInfoKey).projectId = scope.projectId;
    return scope;
  }

  private async resolveProject(ctx: HandlerContext, projectIdParam: string, access: Access): Promise<ProjectScope> {
    const principal = await this.principal(ctx);
    if (principal.kind === "apiKey") {
      const allowed = ACCESS_OF_KEYS[principal.keyKind].includes(access);
      if (!allowed)
        throw forbidden(refusalOf(principal.keyKind, "this route needs a signed-in session, not an API key"));
      if (projectIdParam !== "self" && projectIdParam !== principal.projectId) throw notFound("project");
      return { projectId: principal.projectId, principal };
    }
    if (projectIdParam === "self") throw notFound("project");
    const r = await this.db.query<{ role: Role }>(
      "SELECT role FROM project_members WHERE project_id = $1 AND account_id = $2",
      [projectIdParam, principal.accountId],
    );
    const role = r.rows[0]?.role;
    if (!role) throw notFound("project");
    const needed: Role = access === "data" || access === "heartbeat" ? "member" : access;
    if (rank[role] < rank[needed])
      throw new ApiError(403, "forbidden", `this action needs the ${needed} role in the project`);
    return { projectId: projectIdParam, principal, role };
  }

  /** For ingestion routes with no project in the path: the API key's project (secret or publishable). */
  async ingestKey(ctx: HandlerContext): Promise<ProjectScope> {
    const principal = await this.principal(ctx);
    if (principal.kind !== "apiKey") throw forbidden("event ingestion needs a project API key");
    if (principal.keyKind === "ping") throw forbidden(PING_ONLY_HEARTBEATS);
    ctx.values.get(clientInfoKey).projectId = principal.projectId;
    return { projectId: principal.projectId, principal };
  }
}
