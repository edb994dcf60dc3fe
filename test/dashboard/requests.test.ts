// The requests a project screen waits for before its own (the chart budget of bench/dashboard.ts
// counts every round trip): the project is asked for once, side by side with the session's Me, not
// again when Me answers; the project switcher's list once, not again when the project's name arrives.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { useDashboard } from "../helpers/dashboard.js";

const { p, dash, pageErrors, available, SKIP } = useDashboard();

describe("dashboard: requests of a project screen", () => {
  it("asks for the project once, without waiting for Me, and lists the projects once", async (ctx) => {
    if (!available()) return ctx.skip(SKIP);
    const { context, page } = await dash.open(p.owner);
    const calls: { rpc: string; at: number; done?: number }[] = [];
    page.on("request", (r) => {
      const m = /\/vigil\.v1\.(\w+\/\w+)$/.exec(r.url());
      if (m) calls.push({ rpc: m[1], at: performance.now() });
    });
    page.on("requestfinished", (r) => {
      const m = /\/vigil\.v1\.(\w+\/\w+)$/.exec(r.url());
      const c = calls.find((x) => x.rpc === m?.[1] && x.done === undefined);
      if (c) c.done = performance.now();
    });
    // The project's answer comes late (after Me's), so the shell is drawn before the name is known.
    await page.route("**/vigil.v1.ProjectService/GetProject", async (route) => {
      await new Promise((r) => setTimeout(r, 400));
      await route.continue();
    });
    await page.goto(`/projects/${p.projectId}/settings`);
    await page.getByRole("heading", { name: "Settings" }).waitFor();
    const gets = calls.filter((c) => c.rpc === "ProjectService/GetProject");
    const me = calls.find((c) => c.rpc === "AuthService/Me");
    assert.equal(gets.length, 1, JSON.stringify(calls));
    // The project switcher's list: once (not again when the project's name arrives).
    await page.getByRole("combobox", { name: "Project" }).locator("option:checked").waitFor({ state: "attached" });
    assert.equal(calls.filter((c) => c.rpc === "ProjectService/ListProjects").length, 1, JSON.stringify(calls));
    assert.ok(me?.done !== undefined && gets[0].at < me.done, `GetProject after Me answered: ${JSON.stringify(calls)}`);
    await context.close();
    assert.deepEqual(pageErrors, []);
  });
});
