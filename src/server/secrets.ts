import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { randomBytes } from "node:crypto";

/** SESSION_SECRET, or one generated once and kept in DATA_DIR. */
export async function sessionSecret(configured: string | undefined, dataDir: string): Promise<string> {
  if (configured) return configured;
  await mkdir(dataDir, { recursive: true });
  const file = path.join(dataDir, "session-secret");
  if (existsSync(file)) return (await readFile(file, "utf8")).trim();
  const secret = randomBytes(32).toString("base64url");
  await writeFile(file, secret, { mode: 0o600, flag: "wx" }).catch(async () => undefined);
  return (await readFile(file, "utf8")).trim();
}
