import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { promisify } from "node:util";
import { parse } from "yaml";
import { parseConfig } from "../../src/config/index.js";
import { sessionSecret } from "../../src/server/secrets.js";

// `docker compose up`, as the README says, with nothing set: docker-compose.yml is read the way
// Compose reads it (YAML with merge keys, ${VAR...} interpolated from an empty environment, where
// ${VAR:?...} stops Compose), and every Vigil container's environment (the Dockerfile's ENV, then
// the service's) must pass Vigil's own configuration check. The secret it leaves unset is
// generated into DATA_DIR, so DATA_DIR must be one volume shared by every Vigil container, and
// nodes starting together on it must all read the same secret. With a docker compose client on
// the machine, `docker compose config` checks the file too (CI: .ci/run).

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const run = promisify(execFile);

/** Compose's interpolation: $$, $VAR, ${VAR}, ${VAR:-def}, ${VAR-def}, ${VAR:?err}, ${VAR?err}, ${VAR:+alt} (not nested). */
function interpolate(text: string, env: Record<string, string | undefined>): string {
  return text.replace(
    /\$(\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g,
    (all, dollar, name, op, arg, bare) => {
      if (dollar === "$") return "$";
      if (bare) return env[bare] ?? "";
      const value = env[name];
      const unset = value === undefined;
      const empty = unset || value === "";
      switch (op) {
        case undefined:
          return value ?? "";
        case ":-":
          return empty ? interpolate(arg, env) : value!;
        case "-":
          return unset ? interpolate(arg, env) : value!;
        case ":?":
        case "?":
          if (op === ":?" ? empty : unset) throw new Error(`required variable ${name} is missing a value: ${arg}`);
          return value!;
        case ":+":
          return empty ? "" : interpolate(arg, env);
        case "+":
          return unset ? "" : interpolate(arg, env);
        default:
          return all;
      }
    },
  );
}

interface Service {
  image?: string;
  build?: unknown;
  environment?: Record<string, string | number | boolean | null> | string[];
  volumes?: (string | { type: string; source: string; target: string })[];
  depends_on?: Record<string, unknown> | string[];
  ports?: (string | number | { target: number; published?: string | number; host_ip?: string })[];
}

/** A published port as Compose reads it: "[host_ip:]host:container[/proto]", "container", or the long form. */
function publishedPort(p: string | number | { target: number; published?: string | number; host_ip?: string }): {
  hostIp: string;
  target: number;
} {
  if (typeof p === "object") return { hostIp: p.host_ip ?? "0.0.0.0", target: p.target };
  const parts = String(p).split("/")[0].split(":");
  const target = Number(parts[parts.length - 1].split("-")[0]);
  // An IPv6 host address is written in brackets ("[::1]:8080:8080"): rejoin what split took apart.
  const hostIp =
    parts.length >= 3
      ? parts
          .slice(0, parts.length - 2)
          .join(":")
          .replace(/^\[|\]$/g, "")
      : "0.0.0.0";
  return { hostIp, target };
}

function loadCompose(env: Record<string, string | undefined>): {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
} {
  const raw = readFileSync(path.join(root, "docker-compose.yml"), "utf8");
  return parse(interpolate(raw, env), { merge: true });
}

/** The Dockerfile's ENV lines (KEY=value pairs), as a container of the image starts with them. */
function imageEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(path.join(root, "Dockerfile"), "utf8").split("\n")) {
    const m = /^ENV\s+(.*)$/.exec(line.trim());
    if (!m) continue;
    for (const pair of m[1].matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)/g))
      env[pair[1]] = pair[2].replace(/^"|"$/g, "");
  }
  return env;
}

function serviceEnv(s: Service): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(s.environment)) {
    for (const kv of s.environment) {
      const i = kv.indexOf("=");
      if (i > 0) out[kv.slice(0, i)] = kv.slice(i + 1);
    }
  } else for (const [k, v] of Object.entries(s.environment ?? {})) if (v !== null) out[k] = String(v);
  return out;
}

const isVigil = (s: Service) => s.build !== undefined || /^vigil(:|$)/.test(s.image ?? "");
const volumeAt = (s: Service, target: string) =>
  (s.volumes ?? [])
    .map((v) => (typeof v === "string" ? { source: v.split(":")[0], target: v.split(":")[1] } : v))
    .find((v) => v.target === target)?.source;

describe("docker-compose.yml as `docker compose up` reads it", () => {
  const nothingSet = { HOME: "/root" }; // no SESSION_SECRET, no POSTGRES_PASSWORD

  it("needs no variable set first (no ${VAR:?...} left)", () => {
    assert.doesNotThrow(() => loadCompose(nothingSet));
    // The interpolation itself refuses what Compose refuses:
    assert.throws(() => interpolate("a: ${X:?set X}", {}), /required variable X/);
    assert.equal(interpolate("a: ${X:-d} ${Y} $$Z ${V-v} ${Y:+set}", { Y: "y", V: "" }), "a: d y $Z  set");
  });

  it("gives every Vigil container an environment that Vigil's configuration accepts", () => {
    const { services } = loadCompose(nothingSet);
    const vigil = Object.entries(services).filter(([, s]) => isVigil(s));
    assert.deepEqual(vigil.map(([n]) => n).sort(), ["vigil-api", "vigil-worker"]);
    for (const [name, s] of vigil) {
      const env = { ...imageEnv(), ...serviceEnv(s) };
      const config = assert.doesNotThrow(() => parseConfig(env), `${name}'s environment`) ?? parseConfig(env);
      assert.ok(config.databaseUrl?.startsWith("postgres://"), `${name} uses the compose PostgreSQL`);
      assert.equal(config.redisUrl, "redis://redis:6379", `${name} shares rate limits through Redis`);
      assert.equal(config.host, "0.0.0.0");
      assert.equal(
        config.sessionSecret,
        undefined,
        `${name}: with SESSION_SECRET unset the secret comes from DATA_DIR`,
      );
      assert.equal(config.dataDir, "/data");
    }
    const role = Object.fromEntries(vigil.map(([n, s]) => [n, parseConfig({ ...imageEnv(), ...serviceEnv(s) }).role]));
    assert.deepEqual(role, { "vigil-api": "api", "vigil-worker": "worker" });
  });

  it("passes a SESSION_SECRET that is set through, and keeps no secret of its own", () => {
    const { services } = loadCompose({ SESSION_SECRET: "s".repeat(40) });
    for (const s of Object.values(services).filter(isVigil))
      assert.equal(parseConfig({ ...imageEnv(), ...serviceEnv(s) }).sessionSecret, "s".repeat(40));
    const raw = parse(readFileSync(path.join(root, "docker-compose.yml"), "utf8"), { merge: true }) as {
      services: Record<string, Service>;
    };
    for (const s of Object.values(raw.services).filter(isVigil))
      assert.match(
        String(serviceEnv(s).SESSION_SECRET),
        /^\$\{SESSION_SECRET(:-)?\}$/,
        "only the operator's value, never a literal",
      );
  });

  it("mounts one volume at DATA_DIR in every Vigil container, and declares every named volume and dependency", () => {
    const { services, volumes } = loadCompose(nothingSet);
    const vigil = Object.values(services).filter(isVigil);
    const sources = new Set(vigil.map((s) => volumeAt(s, "/data")));
    assert.equal(sources.size, 1, "one shared volume");
    const [shared] = sources;
    assert.ok(shared && volumes && shared in volumes, `named volume ${shared} declared`);
    for (const [name, s] of Object.entries(services)) {
      for (const v of s.volumes ?? []) {
        const source = typeof v === "string" ? v.split(":")[0] : v.source;
        if (source.startsWith(".") || source.startsWith("/"))
          assert.ok(existsSync(path.resolve(root, source)), `${name}: bind mount ${source} exists`);
        else assert.ok(volumes && source in volumes, `${name}: volume ${source} declared`);
      }
      const deps = Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
      for (const d of deps) assert.ok(d in services, `${name} depends on ${d}, a service`);
    }
  });

  it("publishes Temporal's frontend and UI (no authentication) on loopback only, and only the API port on every interface", () => {
    assert.deepEqual(publishedPort("127.0.0.1:8080:8080"), { hostIp: "127.0.0.1", target: 8080 });
    assert.deepEqual(publishedPort("7233:7233"), { hostIp: "0.0.0.0", target: 7233 });
    assert.deepEqual(publishedPort("[::1]:7233:7233/tcp"), { hostIp: "::1", target: 7233 });
    assert.deepEqual(publishedPort(8080), { hostIp: "0.0.0.0", target: 8080 });
    assert.deepEqual(publishedPort({ target: 7233, published: 7233 }), { hostIp: "0.0.0.0", target: 7233 });
    const { services } = loadCompose(nothingSet);
    const loopback = (ip: string) => ip === "127.0.0.1" || ip === "::1" || ip === "localhost";
    for (const name of ["temporal", "temporal-ui"]) {
      assert.ok(name in services, `${name} is a service of the compose file`);
      for (const p of services[name].ports ?? [])
        assert.ok(loopback(publishedPort(p).hostIp), `${name} publishes ${JSON.stringify(p)} beyond loopback`);
    }
    for (const [name, s] of Object.entries(services)) {
      for (const p of s.ports ?? []) {
        const { hostIp, target } = publishedPort(p);
        if (name === "vigil-api" && target === 3000) continue; // the API, meant to be reached
        assert.ok(loopback(hostIp), `${name} publishes ${JSON.stringify(p)} on every interface (docs/security.md)`);
      }
    }
  });

  it("is accepted by `docker compose config` when a compose client is installed", async (t) => {
    const clients: [string, string[]][] = [
      ["docker", ["compose"]],
      ["docker-compose", []],
    ];
    for (const [bin, pre] of clients) {
      try {
        await run(bin, [...pre, "version"], { timeout: 20_000 });
      } catch {
        continue;
      }
      const env = { ...process.env };
      delete env.SESSION_SECRET;
      delete env.POSTGRES_PASSWORD;
      await run(bin, [...pre, "-f", path.join(root, "docker-compose.yml"), "config", "-q"], {
        cwd: root,
        env,
        timeout: 60_000,
      });
      return;
    }
    t.skip("no docker compose client here (the YAML checks above still ran)");
  });
});

describe("nodes starting together on one DATA_DIR", () => {
  it("all read the one session secret generated, kept 0600", async () => {
    for (let round = 0; round < 5; round++) {
      const dir = await mkdtemp(path.join(os.tmpdir(), "vigil-secret-"));
      try {
        // Concurrent first starts: every call finds no secret yet, and all must end with the same one.
        const secrets = await Promise.all(Array.from({ length: 32 }, () => sessionSecret(undefined, dir)));
        assert.equal(new Set(secrets).size, 1, `one secret: ${[...new Set(secrets)].join(" ")}`);
        assert.ok(secrets[0].length >= 40);
        assert.equal((await stat(path.join(dir, "session-secret"))).mode & 0o777, 0o600);
        assert.deepEqual((await readdir(dir)).sort(), ["session-secret"], "no temporary files left");
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  });
});
