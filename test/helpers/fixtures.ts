import { randomBytes } from "node:crypto";
import type { RestClient } from "./rest.js";
import { sessionCookie } from "./rest.js";

export interface Account {
  email: string;
  password: string;
  cookie: string;
  id: string;
}

export interface ProjectFixture {
  owner: Account;
  projectId: string;
  /** A production API key secret for the project. */
  key: string;
  keyId: string;
}

export async function signup(rest: RestClient, name = "user"): Promise<Account> {
  const email = `${name}-${randomBytes(4).toString("hex")}@example.com`;
  const password = "correct horse battery";
  const r = await rest.post("/v1/auth/signup", { email, password, name });
  if (r.status !== 201) throw new Error(`signup failed: ${r.status} ${r.text}`);
  return { email, password, cookie: sessionCookie(r), id: r.body.data.id };
}

/** Signs up an owner, creates a project and an API key. */
export async function project(rest: RestClient, platform = "node"): Promise<ProjectFixture> {
  const owner = await signup(rest, "owner");
  const p = await rest.post("/v1/projects", { name: "Test project", platform }, { cookie: owner.cookie });
  if (p.status !== 201) throw new Error(`create project failed: ${p.status} ${p.text}`);
  const k = await rest.post(
    `/v1/projects/${p.body.data.id}/api-keys`,
    { name: "test", environment: "production" },
    { cookie: owner.cookie },
  );
  if (k.status !== 201) throw new Error(`create key failed: ${k.status} ${k.text}`);
  return { owner, projectId: p.body.data.id, key: k.body.data.secret, keyId: k.body.data.id };
}

/** A publishable key (vk_pub_..., ingestion only) of `p`, created by its owner: its id and secret. */
export async function publishableKey(rest: RestClient, p: ProjectFixture): Promise<{ id: string; secret: string }> {
  const k = await rest.post(
    `/v1/projects/${p.projectId}/api-keys`,
    { name: "web", environment: "production", kind: "publishable" },
    { cookie: p.owner.cookie },
  );
  if (k.status !== 201) throw new Error(`create publishable key failed: ${k.status} ${k.text}`);
  return { id: k.body.data.id, secret: k.body.data.secret };
}

/** A ping key (vk_ping_..., heartbeats only: cron jobs' ping URLs) of `p`, created by its owner: its id and secret. */
export async function pingKey(
  rest: RestClient,
  p: ProjectFixture,
  name = "cron",
): Promise<{ id: string; secret: string }> {
  const k = await rest.post(
    `/v1/projects/${p.projectId}/api-keys`,
    { name, environment: "production", kind: "ping" },
    { cookie: p.owner.cookie },
  );
  if (k.status !== 201) throw new Error(`create ping key failed: ${k.status} ${k.text}`);
  return { id: k.body.data.id, secret: k.body.data.secret };
}

/** Signs up an account and adds it to `p` with `role` (by its owner); the account. */
export async function memberOf(
  rest: RestClient,
  p: Pick<ProjectFixture, "projectId" | "owner">,
  name = "member",
  role: "member" | "admin" = "member",
): Promise<Account> {
  const account = await signup(rest, name);
  const r = await rest.post(
    `/v1/projects/${p.projectId}/members`,
    { email: account.email, role },
    { cookie: p.owner.cookie },
  );
  if (r.status !== 201) throw new Error(`add member failed: ${r.status} ${r.text}`);
  return account;
}

/** Two tenants, an account in neither, and a revoked key of the first: what the security batteries attack with. */
export interface Tenants {
  a: ProjectFixture;
  b: ProjectFixture;
  stranger: Account;
  revokedKey: string;
}

export async function tenants(rest: RestClient): Promise<Tenants> {
  const a = await project(rest);
  const b = await project(rest);
  const stranger = await signup(rest, "stranger");
  const k = await rest.post(
    `/v1/projects/${a.projectId}/api-keys`,
    { name: "revoked", environment: "preview" },
    { cookie: a.owner.cookie },
  );
  await rest.del(`/v1/projects/${a.projectId}/api-keys/${k.body.data.id}`, { cookie: a.owner.cookie });
  return { a, b, stranger, revokedKey: k.body.data.secret };
}

/** Asserts the decisions.md error body shape and returns it. */
export function errorBody(res: { status: number; body: any; text: string }): {
  code: string;
  message: string;
  details?: unknown;
} {
  const e = res.body?.error;
  if (!e || typeof e.code !== "string" || typeof e.message !== "string" || !/^[a-z][a-z0-9_]*$/.test(e.code)) {
    throw new Error(`not a Vigil error body (status ${res.status}): ${res.text}`);
  }
  return e;
}
