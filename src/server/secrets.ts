import { existsSync } from "node:fs";
import { link, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { randomBytes } from "node:crypto";

/**
 * SESSION_SECRET, or one generated once and kept in DATA_DIR (0600). Nodes sharing DATA_DIR (the
 * compose file's `vigil-data` volume) share it: the secret is written whole under a temporary name
 * and linked into place, so when several start at once one wins and every node reads that one.
 */
export async function sessionSecret(configured: string | undefined, dataDir: string): Promise<string> {
  if (configured) return configured;
  await mkdir(dataDir, { recursive: true });
  const file = path.join(dataDir, "session-secret");
  if (!existsSync(file)) {
    const tmp = `${file}.${process.pid}.${randomBytes(6).toString("hex")}`;
    await writeFile(tmp, randomBytes(32).toString("base64url"), { mode: 0o600, flag: "wx" });
    try {
      await link(tmp, file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // EEXIST: another node won. Without hard links (some volume drivers): create it exclusively.
      if (code !== "EEXIST")
        await writeFile(file, await readFile(tmp), { mode: 0o600, flag: "wx" }).catch((e) =>
          e.code === "EEXIST" ? undefined : Promise.reject(e),
        );
    } finally {
      await rm(tmp, { force: true });
    }
  }
  const secret = (await readFile(file, "utf8")).trim();
  if (secret.length < 16)
    throw new Error(
      `${file} holds no usable session secret (under 16 characters): delete it to generate a new one, or set SESSION_SECRET`,
    );
  return secret;
}
