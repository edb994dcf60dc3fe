import { after, before } from "node:test";
import type { Clock } from "../../src/shared/clock.js";
import { startTestApp, type TestApp } from "./app.js";
import { project, type ProjectFixture } from "./fixtures.js";
import { later } from "./later.js";

// The header of most test files, once: a real Vigil for the file (startTestApp in before(), closed
// in after()) and, with useProject, an owner with a project and an API key on it. Call it at the top
// level of the file, before the file's own hooks (they run after it, in the order they are written):
//
//   const { t, p } = useProject({ WEBHOOK_ALLOW_PRIVATE: "true" });
//
// `t` and `p` stand for the app and the fixture made in before(): they can be used in any hook or
// test (not at the top level of the file, where nothing is started yet). More set-up for the whole
// file goes in `setup`, which runs in the same before() hook once they exist: Node 20 runs a file's
// top-level before() hooks at the same time, so a second one could not count on them. For the same
// reason, settings known only once something else has started (a local SMTP server's port) are
// given as a function, awaited in the app's own before():
//
//   const smtp = useSmtpServer();
//   const { t, p } = useProject(async () => ({ SMTP_URL: (await smtp()).url() }));

type AppOptions = Parameters<typeof startTestApp>[1];
type Env = Record<string, string> | (() => Promise<Record<string, string>>);

/** A Vigil for this file: started before its tests, closed after them. */
export function useApp(
  env: Env = {},
  opts: AppOptions & { clock?: Clock } = {},
  setup?: () => Promise<void> | void,
): { t: TestApp } {
  let app: TestApp | undefined;
  before(async () => {
    app = await startTestApp(typeof env === "function" ? await env() : env, opts);
    await setup?.();
  });
  after(() => app?.close());
  return { t: later(() => app, "the test app") };
}

/** useApp plus an owner, a project and a production API key (fixtures.ts `project`). */
export function useProject(
  env: Env = {},
  opts: AppOptions & { clock?: Clock } = {},
  setup?: () => Promise<void> | void,
): { t: TestApp; p: ProjectFixture } {
  let fixture: ProjectFixture | undefined;
  const { t } = useApp(env, opts, async () => {
    fixture = await project(t.rest);
    await setup?.();
  });
  return { t, p: later(() => fixture, "the project fixture") };
}
