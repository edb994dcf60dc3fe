import type { HandlerContext } from "@connectrpc/connect";
import { AuthService } from "../../gen/vigil/v1/auth_pb.js";
import { clientAddress, clientInfoKey } from "../shared/context.js";
import type { Config } from "../config/index.js";
import type { Clock } from "../shared/clock.js";
import { ApiError, conflict, forbidden, rateLimited, unauthenticated } from "../shared/errors.js";
import { bind, type Feature } from "../shared/feature.js";
import { newId } from "../shared/ids.js";
import { hashedKey, type RateLimiter } from "../shared/ratelimit.js";
import { isUniqueViolation } from "../shared/pg-errors.js";
import { validate } from "../shared/validate.js";
import type { Db } from "../storage/db.js";
import type { Authenticator } from "./principal.js";
import { toAccount } from "./messages.js";
import { DUMMY_HASH, hashPassword, verifyPassword } from "./passwords.js";
import { loginSchema, signupSchema } from "./requests.js";
import { clearedCookie, createSession, revokeToken, tokenFromCookieHeader } from "./sessions.js";
import * as store from "./store.js";

// Accounts and sessions: handlers only (SQL in store.ts and sessions.ts, validation in requests.ts).

/** The client address the per-address limits count under. */
const addressOf = (ctx: HandlerContext) => clientAddress(ctx.values.get(clientInfoKey));

/**
 * What the auth feature uses (a part of platform/deps.ts's Deps, named here: platform/ builds on the
 * Authenticator of this folder, so this folder does not import platform/).
 */
export interface AuthFeatureDeps {
  db: Db;
  clock: Clock;
  limits: RateLimiter;
  auth: Authenticator;
  config: Pick<Config, "signup">;
  sessionSecret: string;
}

export function createAuthFeature(deps: AuthFeatureDeps): Feature {
  const { db, clock, limits } = deps;
  const secure = (ctx: HandlerContext) =>
    (ctx.requestHeader.get("x-forwarded-proto") ?? new URL(ctx.url).protocol.replace(":", "")) === "https";
  const cookieOpts = (ctx: HandlerContext) => ({ secret: deps.sessionSecret, secure: secure(ctx) });

  return {
    name: "auth",
    services: [
      bind(
        AuthService,
        {
          async signup(req, ctx) {
            const input = validate(signupSchema, { email: req.email, password: req.password, name: req.name });
            await limits.take("signups", addressOf(ctx));
            const closed = deps.config.signup === "closed";
            const refuseClosed = () => forbidden("sign-up is closed on this server");
            // Cheap refusal first; the check that counts runs with the insert, under the lock.
            if (closed && (await store.anyAccount(db))) throw refuseClosed();
            const account = {
              id: newId("usr"),
              email: input.email,
              name: input.name ?? null,
              passwordHash: await hashPassword(input.password),
              now: clock(),
            };
            let row: store.AccountRow;
            try {
              if (!closed) row = await store.insertAccount(db, account);
              else {
                // Check and insert in one transaction under one lock: exactly one first sign-up wins.
                const first = await store.insertFirstAccount(db, account);
                if (!first) throw refuseClosed();
                row = first;
              }
            } catch (err) {
              if (isUniqueViolation(err))
                throw conflict("an account with this email already exists", [
                  { field: "email", message: "already registered" },
                ]);
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
            const verdicts = await Promise.all([
              limits.hit("loginAccount", account, 1, at),
              limits.hit("loginAddress", address, 1, at),
            ]);
            const refused = verdicts.filter((v) => !v.allowed);
            if (refused.length) throw rateLimited(Math.max(...refused.map((v) => v.retryAfterSeconds)));
            const row = await store.accountByEmail(db, input.email);
            const ok = await verifyPassword(input.password, row?.password_hash ?? DUMMY_HASH);
            if (!row || !ok) throw new ApiError(401, "invalid_credentials", "email or password is incorrect");
            await Promise.all([limits.refund("loginAccount", account, at), limits.refund("loginAddress", address, at)]);
            ctx.responseHeader.append("set-cookie", await createSession(db, row.id, clock(), cookieOpts(ctx)));
            return { data: toAccount(row) };
          },
          async logout(_req, ctx) {
            // An API key (any kind) is refused as on every session route: 403, not "not signed in".
            await deps.auth.session(ctx);
            const token = tokenFromCookieHeader(ctx.requestHeader.get("cookie"), deps.sessionSecret);
            if (!token) throw unauthenticated("not signed in");
            await revokeToken(db, token, clock());
            ctx.responseHeader.append("set-cookie", clearedCookie(secure(ctx)));
            return {};
          },
          async me(_req, ctx) {
            const p = await deps.auth.session(ctx);
            const row = await store.accountById(db, p.accountId);
            if (!row) throw unauthenticated();
            return { data: toAccount(row) };
          },
          // No credentials: one bit, so a fresh server's dashboard offers the first sign-up.
          async getSignupState() {
            return { data: { accountsExist: await store.anyAccount(db) } };
          },
        },
        { rules: { signup: signupSchema, login: loginSchema } },
      ),
    ],
  };
}
