import pino from "pino";
import { ConfigError, loadConfig, type Config } from "./config/index.js";
import { buildApp, type App } from "./server/app.js";

// Entry point: `npm start` (ROLE=all), `npm run worker` (ROLE=worker).

const roleArg = process.argv.find((a) => a.startsWith("--role="))?.slice("--role=".length);

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(roleArg ? { ROLE: roleArg } : {});
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const log = pino({ level: config.logLevel, base: undefined });
  // A failed start stops what it started (buildApp closes its own steps; a listen failure closes
  // the app: workers, Redis, the pool, the embedded cluster) and exits 1 with one line on stderr.
  let app: App | undefined;
  let port: number;
  // A library's unhandled error during start-up ends the start the same way: one line, exit 1.
  const crashed = (err: Error) => {
    console.error(`Vigil failed to start: ${startupError(err, config)}`);
    process.exit(1);
  };
  process.on("uncaughtException", crashed);
  try {
    app = await buildApp(config, { log });
    port = await app.listen();
  } catch (err) {
    const force = setTimeout(() => process.exit(1), 20_000);
    force.unref();
    await app?.close().catch(() => undefined);
    console.error(`Vigil failed to start: ${startupError(err, config)}`);
    process.exit(1);
  }
  process.off("uncaughtException", crashed);
  log.info(
    { host: config.host, port, role: config.role, database: config.databaseUrl ? "external" : "embedded" },
    `Vigil listening on http://${config.host}:${port}`,
  );
  if (config.metrics && app.metricsPort !== undefined)
    log.info(
      { host: config.metrics.host, port: app.metricsPort },
      `metrics on http://${config.metrics.host}:${app.metricsPort}/metrics`,
    );
  else if (!config.metrics) log.info("metrics not served (METRICS_PORT=off)");

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    const force = setTimeout(() => process.exit(1), 20_000);
    force.unref();
    await app.close();
    process.exit(0);
  };
  // This process owns shutdown, in order (listeners, workers, pool, cluster): a library's own
  // signal handler would stop PostgreSQL under in-flight commits.
  process.removeAllListeners("SIGTERM");
  process.removeAllListeners("SIGINT");
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

/** One line saying what failed; for a port, which setting names it. */
function startupError(err: unknown, config: Config): string {
  const e = err as NodeJS.ErrnoException & { port?: number; address?: string };
  if ((e?.code === "EADDRINUSE" || e?.code === "EACCES" || e?.code === "EADDRNOTAVAIL") && typeof e.port === "number") {
    const setting =
      e.port === config.metrics?.port ? "METRICS_PORT" : e.port === config.grpcPort ? "GRPC_PORT" : "PORT";
    const why =
      e.code === "EADDRINUSE"
        ? "is already in use"
        : e.code === "EACCES"
          ? "may not be bound by this user"
          : "is not an address of this machine";
    return `${e.address ?? ""}:${e.port} ${why} (${e.code}); set ${setting}${e.code === "EADDRNOTAVAIL" ? " or HOST" : ""} to another port, or stop what listens there`;
  }
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/\s*\n\s*/g, " ");
}

main().catch((err) => {
  console.error(`Vigil failed to start: ${err instanceof Error ? err.message : String(err)}`.replace(/\s*\n\s*/g, " "));
  process.exit(1);
});
