// Small platform helpers with no dependency: ids, byte lengths, timers that do not keep Node alive.

/** A random UUID (v4): crypto.randomUUID where it exists (Node 20, secure browser contexts), else getRandomValues. */
export function uuid(): string {
  const c = globalThis.crypto;
  if (typeof c?.randomUUID === "function") return c.randomUUID();
  const b = new Uint8Array(16);
  if (typeof c?.getRandomValues === "function") c.getRandomValues(b);
  else for (let i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  let h = "";
  for (let i = 0; i < 16; i++) h += b[i].toString(16).padStart(2, "0");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** UTF-8 length of a string without encoding it (lone surrogates count 3, as TextEncoder writes U+FFFD). */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 2; // 4 bytes for 2 UTF-16 units
        i++;
      } else n += 2;
    } else n += 2;
  }
  return n;
}

/** setTimeout that does not keep a Node process alive (no-op in browsers). */
export function unrefTimer(fn: () => void, ms: number): ReturnType<typeof setTimeout> {
  const t = setTimeout(fn, ms);
  (t as unknown as { unref?: () => void }).unref?.();
  return t;
}

/** Waits `ms` (unref'd) or until `signal` aborts, whichever comes first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = unrefTimer(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** The subset of Node's `process` the SDK touches, when it runs on Node (typed here: the package has no @types/node). */
export interface NodeProcess {
  env?: Record<string, string | undefined>;
  on?(event: "beforeExit", fn: () => void): unknown;
  off?(event: "beforeExit", fn: () => void): unknown;
  versions?: { node?: string };
}

export function nodeProcess(): NodeProcess | undefined {
  const p = (globalThis as { process?: NodeProcess }).process;
  return p?.versions?.node ? p : undefined;
}

/** True in a page (window + document); false on Node, in workers and on edge runtimes. */
export function inBrowser(): boolean {
  return typeof window !== "undefined" && typeof document !== "undefined";
}

/** A short stable hash (FNV-1a, hex) used to name storage keys without writing the key itself. */
export function fnv1a(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}
