import { execFile } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { randomUUID } from "node:crypto";
import { after, before } from "node:test";
import { TestWorkflowEnvironment } from "@temporalio/testing";
import { later } from "./later.js";
import {
  bundleWorkflowCode,
  DefaultLogger,
  Runtime,
  Worker,
  type WorkflowBundleWithSourceMap,
} from "@temporalio/worker";
import { WORKFLOWS_PATH } from "../../src/temporal/worker.js";

// Temporal's time-skipping test server for the workflow unit tests (test/workflows/): timers of hours
// pass at once while nothing is running. @temporalio/testing would download its native build from
// Temporal's site, which CI cannot reach; the same server is published on Maven Central
// (io.temporal:temporal-test-server, Java), so it is obtained with `mvn` into
// .tmp/temporal-test-server/ and run by a small launcher script with `java`. TEMPORAL_TEST_SERVER
// names another launcher (or the native binary): an executable taking `<port> [args]`.

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const run = promisify(execFile);

/** The version obtained from Maven Central (its gRPC API is the one @temporalio/testing 1.x speaks). */
const TEST_SERVER_VERSION = "1.38.0";
const DIR = path.join(root, ".tmp", "temporal-test-server");

const HOW_TO_GET = [
  "Temporal's time-skipping test server (for test/workflows/) was not found and could not be obtained.",
  "It needs a JVM and Maven (Debian: apt-get install default-jre-headless maven), then `npm test` fetches",
  `io.temporal:temporal-test-server:${TEST_SERVER_VERSION} from Maven Central into .tmp/temporal-test-server/;`,
  "or point TEMPORAL_TEST_SERVER at a test-server executable (it is started as `<exe> <port>`).",
].join("\n");

const POM = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>vigil.test</groupId><artifactId>temporal-test-server</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>io.temporal</groupId><artifactId>temporal-test-server</artifactId><version>${TEST_SERVER_VERSION}</version>
    </dependency>
  </dependencies>
</project>
`;

// One JIT tier and the serial collector: the server starts in ~1.5 s and stays light on 2 shared cores.
const LAUNCHER = `#!/bin/sh
exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xss512k -cp "$(dirname "$0")/lib/*" io.temporal.testserver.TestServer "$@"
`;

function obtained(): boolean {
  const lib = path.join(DIR, "lib");
  return (
    existsSync(path.join(DIR, "test-server")) &&
    existsSync(lib) &&
    readdirSync(lib).includes(`temporal-test-server-${TEST_SERVER_VERSION}.jar`)
  );
}

let server: Promise<string> | undefined;

/**
 * The time-skipping test server's launcher: TEMPORAL_TEST_SERVER, else .tmp/temporal-test-server/
 * (obtained with `mvn` from Maven Central when missing). Throws HOW_TO_GET when it cannot be had:
 * the workflow tests never skip silently.
 */
export function timeSkippingServer(): Promise<string> {
  server ??= (async () => {
    const given = process.env.TEMPORAL_TEST_SERVER;
    if (given) return given;
    const launcher = path.join(DIR, "test-server");
    if (obtained()) return launcher;
    try {
      await mkdir(DIR, { recursive: true });
      await writeFile(path.join(DIR, "pom.xml"), POM);
      await run("mvn", ["-q", "-B", "dependency:copy-dependencies", "-DoutputDirectory=lib"], {
        cwd: DIR,
        timeout: 600_000,
      });
      await run("java", ["-version"], { timeout: 30_000 });
      await writeFile(launcher, LAUNCHER);
      await chmod(launcher, 0o755);
    } catch (err) {
      throw new Error(`${HOW_TO_GET}\n(${err instanceof Error ? err.message.split("\n")[0] : String(err)})`);
    }
    if (!obtained()) throw new Error(HOW_TO_GET);
    return launcher;
  })();
  return server;
}

let quiet = false;

/** A fresh time-skipping environment (its own server process): tear it down after the file. */
export async function startTimeSkipping(): Promise<TestWorkflowEnvironment> {
  const exe = await timeSkippingServer();
  // The SDK's runtime, quiet (installed once per process, before the environment's connection).
  if (!quiet) {
    Runtime.install({
      logger: new DefaultLogger("ERROR"),
      telemetryOptions: { logging: { filter: { core: "ERROR", other: "ERROR" } } },
    });
    quiet = true;
  }
  return TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: "existing-path", path: exe } } });
}

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/**
 * Runs `fn` while a worker of today's workflows/ serves a fresh task queue of `env`, with
 * `activities` in place of Vigil's (plain functions: the test records what they were asked and
 * answers what it needs). The worker stops when `fn` settles.
 */
export async function withWorker<T>(
  env: TestWorkflowEnvironment,
  activities: object,
  fn: (taskQueue: string) => Promise<T>,
): Promise<T> {
  bundle ??= bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger("ERROR") });
  const taskQueue = `wf-test-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: await bundle,
    activities,
  });
  return worker.runUntil(fn(taskQueue));
}

/** The test server's time at each call of a fake activity, with a wait for the n-th call. */
class CallTimes {
  readonly times: number[] = [];
  private waiters: { n: number; resolve: () => void }[] = [];

  constructor(private env: TestWorkflowEnvironment) {}

  /** Records a call (at the server's time, which skips). */
  async record(): Promise<void> {
    this.times.push(await this.env.currentTimeMs());
    this.waiters = this.waiters.filter((w) => (this.times.length >= w.n ? (w.resolve(), false) : true));
  }

  /** Resolves once n calls were recorded. */
  reached(n: number): Promise<void> {
    if (this.times.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }
}

/** A stand-in activity's answers: each call recorded (CallTimes), answered from the script, its last answer repeated. */
export class ScriptedCalls<T> extends CallTimes {
  constructor(
    env: TestWorkflowEnvironment,
    private readonly answers: T[],
  ) {
    super(env);
  }

  async next(): Promise<T> {
    await this.record();
    const a = this.answers.length > 1 ? this.answers.shift() : this.answers[0];
    if (a === undefined) throw new Error("no answer scripted");
    return a;
  }
}

/** A time-skipping test server for this file: started before its tests, torn down after them. */
export function useTimeSkipping(): TestWorkflowEnvironment {
  let env: TestWorkflowEnvironment | undefined;
  before(async () => {
    env = await startTimeSkipping();
  });
  after(() => env?.teardown());
  return later(() => env, "the time-skipping test server");
}
