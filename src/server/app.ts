import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { createContextValues } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import pino, { type Logger } from "pino";
import { Authenticator } from "../auth/principal.js";
import type { Config } from "../config/index.js";
import { systemClock, type Clock } from "../shared/clock.js";
import { clientInfoKey, type ClientInfo } from "../shared/context.js";
import type { Deps } from "../shared/deps.js";
import { guardImpl, type Feature } from "../shared/feature.js";
import { Hooks } from "../shared/hooks.js";
import { Telemetry } from "../shared/telemetry.js";
import { createPool, type Db } from "../storage/db.js";
import { startEmbeddedPostgres, type EmbeddedHandle } from "../storage/embedded.js";
import { migrate } from "../storage/migrate.js";
import { createRestHandler } from "../transcoding/rest.js";
import { createFeatures } from "./features.js";
import { listen, type Listener } from "./listen.js";
import { sessionSecret } from "./secrets.js";

// Builds the whole service apart from listening: tests and main.ts both use buildApp().

export interface AppOptions {
  log?: Logger;
  clock?: Clock;
}

export interface App {
  deps: Deps;
  features: Feature[];
  handler: (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void;
  /** Starts listening (and background work when the role includes it). Returns the bound port. */
  listen(port?: number): Promise<number>;
  /** Graceful stop: stop accepting, finish in-flight work, flush accepted writes, release the database. */
  close(): Promise<void>;
}

const CONNECT_PATH = /^\/vigil\.v1\.[A-Za-z]+\/[A-Za-z]+$/;

export async function buildApp(config: Config, opts: AppOptions = {}): Promise<App> {
  const log = opts.log ?? pino({ level: config.logLevel, base: undefined });
  let embedded: EmbeddedHandle | undefined;
  let url = config.databaseUrl;
  if (!url) {
    embedded = await startEmbeddedPostgres(config.dataDir, log);
    url = embedded.url;
  }
  const db: Db = createPool(url, config.pgPoolSize);
  await migrate(db);

  const shutdown = new AbortController();
  const deps: Deps = {
    config,
    db,
    log,
    clock: opts.clock ?? systemClock,
    hooks: new Hooks(),
    telemetry: new Telemetry(),
    auth: undefined as unknown as Authenticator,
    sessionSecret: await sessionSecret(config.sessionSecret, config.dataDir),
    shutdownSignal: shutdown.signal,
  };
  deps.auth = new Authenticator(deps, deps.sessionSecret);

  const features = await createFeatures(deps);
  const bindings = features.flatMap((f) => f.services.map((b) => guardImpl(b, log)));

  const connect = connectNodeAdapter({
    routes: (router) => {
      for (const b of bindings) router.service(b.desc, b.impl as never);
    },
    shutdownSignal: shutdown.signal,
    readMaxBytes: config.maxBodyBytes,
    contextValues: (req) => createContextValues().set(clientInfoKey, clientOf(req)),
  });
  const rest = createRestHandler({ bindings, maxBodyBytes: config.maxBodyBytes, log, shutdownSignal: shutdown.signal });

  function clientOf(req: { socket?: { remoteAddress?: string }; headers: Record<string, unknown> }): ClientInfo {
    const rid = req.headers["x-request-id"];
    return { ip: req.socket?.remoteAddress ?? "", requestId: typeof rid === "string" && rid.length <= 128 ? rid : randomUUID() };
  }

  const handler: App["handler"] = (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const started = process.hrtime.bigint();
    const client = clientOf(req as IncomingMessage);
    res.setHeader("x-request-id", client.requestId);
    res.on("finish", () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      log.debug({ requestId: client.requestId, method: req.method, path, status: res.statusCode, ms }, "request");
    });
    if (CONNECT_PATH.test(path)) {
      connect(req as never, res as never);
      return;
    }
    void rest(req, res, client);
  };

  let listener: Listener | undefined;
  let started = false;
  const workerRole = config.role !== "api";

  return {
    deps,
    features,
    handler,
    async listen(port = config.port) {
      if (workerRole && !started) {
        for (const f of features) await f.start?.();
        started = true;
      }
      listener = await listen(handler, config.host, port);
      return listener.port;
    },
    async close() {
      shutdown.abort();
      await listener?.close();
      for (const f of [...features].reverse()) await f.stop?.().catch((err) => log.error({ err, feature: f.name }, "feature stop failed"));
      await db.end().catch(() => undefined);
      await embedded?.stop().catch((err) => log.error({ err }, "embedded postgres stop failed"));
    },
  };
}
