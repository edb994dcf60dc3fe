import type { HandlerContext } from "@connectrpc/connect";
import { z } from "zod";
import { AuthService } from "../../gen/vigil/v1/auth_pb.js";
import { clientInfoKey } from "../shared/context.js";
import type { Deps } from "../shared/deps.js";
import { ApiError, conflict, forbidden, rateLimited, unauthenticated } from "../shared/errors.js";
import type { Feature } from "../shared/feature.js";
import { newId } from "../shared/ids.js";
import { hashedKey } from "../shared/ratelimit.js";
import { isUniqueViolation } from "../shared/pg-errors.js";
import { validate } from "../shared/validate.js";
import { tx } from "../storage/db.js";
import { DUMMY_HASH, hashPassword, verifyPassword } from "./passwords.js";
import { clearedCookie, createSession, revokeToken, tokenFromCookieHeader } from "./sessions.js";

const email = z.string().trim().toLowerCase().email().max(320);
const signupSchema = z.object({
  email,
  password: z.string().min(8, "must be at least 8 characters").max(1024),
  name: z.string().trim().min(1).max(200).optional(),
});
const loginSchema = z.object({ email, password: z.string().min(1).max(1024) });

interface AccountRow {
  id: string;
  email: string;
  name: string | null;
  created_at: Date;
}

const toAccount = (r: AccountRow) => ({ id: r.id, email: r.email, name: r.name ?? undefined, createdAt: r.created_at.toISOString() });

const INSERT_ACCOUNT = "INSERT INTO accounts (id, email, name, password_hash, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id, email, name, created_at";
/** Serializes first sign-ups under SIGNUP=closed (transaction-level advisory lock). */
const SIGNUP_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('vigil:signup', 0))";

/** The client address the per-address limits count under. */
const addressOf = (ctx: HandlerContext) => ctx.values.get(clientInfoKey).ip || "unknown";

export function createAuthFeature(deps: Deps): Feature {
  const { db, clock, limits } = deps;
  const secure = (ctx: HandlerContext) => (ctx.requestHeader.get("x-forwarded-proto") ?? new URL(ctx.url).protocol.replace(":", "")) === "https";
  const cookieOpts = (ctx: HandlerContext) => ({ secret: deps.sessionSecret, secure: secure(ctx) });

  return {
    name: "auth",
    services: [
      {
        desc: AuthService,
        impl: {
          async signup(req, ctx) {
            const input = validate(signupSchema, { email: req.email, password: req.password, name: req.name });
            await limits.take("signups", addressOf(ctx));
            const closed = deps.config.signup === "closed";
            const refuseClosed = () => forbidden("sign-up is closed on this server");
            // Cheap refusal first; the check that counts runs with the insert, under the lock.
            if (closed && (await db.query("SELECT 1 FROM accounts LIMIT 1")).rowCount) throw refuseClosed();
            const values = [newId("usr"), input.email, input.name ?? null, await hashPassword(input.password), clock()];
            let row: AccountRow;
            try {
              if (!closed) row = (await db.query<AccountRow>(INSERT_ACCOUNT, values)).rows[0];
              else {
                // Check and insert in one transaction under one lock: exactly one first sign-up wins.
                row = await tx(db, async (c) => {
                  await c.query(SIGNUP_LOCK);
                  if ((await c.query("SELECT 1 FROM accounts LIMIT 1")).rowCount) throw refuseClosed();
                  return (await c.query<AccountRow>(INSERT_ACCOUNT, values)).rows[0];
                });
              }
            } catch (err) {
              if (isUniqueViolation(err)) throw conflict("an account with this email already exists", [{ field: "email", message: "already registered" }]);
              throw err;
            }
            ctx.responseHeader.append("set-cookie", await createSession(db, row.id, clock(), cookieOpts(ctx)));
            return { data: toAccount(row) };
          },
          async login(req, ctx) {
            const input = validate(loginSchema, { email: req.email, password: req.password });
            // Every attempt counts against the email and the address before the password is checked
            // (so concurrent guesses cannot overrun the limit); a success gives its count back. An
            // email with no account counts the same, so a 429 says nothing about whether it exists.
            const at = clock();
            const account = hashedKey(input.email);
            const address = addressOf(ctx);
            const verdicts = await Promise.all([limits.hit("loginAccount", account, 1, at), limits.hit("loginAddress", address, 1, at)]);
            const refused = verdicts.filter((v) => !v.allowed);
            if (refused.length) throw rateLimited(Math.max(...refused.map((v) => v.retryAfterSeconds)));
            const r = await db.query<AccountRow & { password_hash: string }>("SELECT id, email, name, created_at, password_hash FROM accounts WHERE lower(email) = $1", [input.email]);
            const row = r.rows[0];
            const ok = await verifyPassword(input.password, row?.password_hash ?? DUMMY_HASH);
            if (!row || !ok) throw new ApiError(401, "invalid_credentials", "email or password is incorrect");
            await Promise.all([limits.refund("loginAccount", account, at), limits.refund("loginAddress", address, at)]);
            ctx.responseHeader.append("set-cookie", await createSession(db, row.id, clock(), cookieOpts(ctx)));
            return { data: toAccount(row) };
          },
          async logout(_req, ctx) {
            const token = tokenFromCookieHeader(ctx.requestHeader.get("cookie"), deps.sessionSecret);
            if (!token) throw unauthenticated("not signed in");
            await revokeToken(db, token, clock());
            ctx.responseHeader.append("set-cookie", clearedCookie(secure(ctx)));
            return {};
          },
          async me(_req, ctx) {
            const p = await deps.auth.session(ctx);
            const r = await db.query<AccountRow>("SELECT id, email, name, created_at FROM accounts WHERE id = $1", [p.accountId]);
            if (!r.rows[0]) throw unauthenticated();
            return { data: toAccount(r.rows[0]) };
          },
        },
      },
    ],
  };
}
