import { randomBytes } from "node:crypto";
import pg from "pg";

// Each test file (or test) gets its own database cloned from the migrated template.

export function adminUrl(): string {
  const url = process.env.VIGIL_TEST_ADMIN_URL;
  if (!url) throw new Error("run the tests with `npm test` (it starts PostgreSQL and sets VIGIL_TEST_ADMIN_URL)");
  return url;
}

export async function createTestDatabase(): Promise<string> {
  const name = `vigil_t_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    // CREATE DATABASE ... TEMPLATE fails while another session is connected to the template; retry.
    for (let i = 0; ; i++) {
      try {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${process.env.VIGIL_TEST_TEMPLATE}`);
        break;
      } catch (err) {
        if (i > 50) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Holds LOCK TABLE analytics_rollups (every unfiltered count reads it) on its own connection until
 * the returned release(): a real way to make analytics statements wait.
 */
export async function lockRollups(url: string): Promise<() => Promise<void>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query("BEGIN");
  await c.query("LOCK TABLE analytics_rollups IN ACCESS EXCLUSIVE MODE");
  return async () => {
    await c.query("COMMIT");
    await c.end();
  };
}
