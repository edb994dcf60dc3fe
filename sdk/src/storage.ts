import { VigilError } from "./errors.js";
import { fnv1a, uuid } from "./util.js";

// The browser's persisted queue (localStorage). Each Vigil instance writes its own key
// (`vigil:q:<hash of the api key>:<instance id>`), so two tabs never overwrite each other's items.
// On start an instance ADOPTS every key of the same api key (a previous page's, or another open
// tab's): their items join its queue and their keys are removed. A live tab whose key was adopted
// writes it again on its next change, so the same items may then be sent by both tabs: harmless,
// the server stores an id once. Items leave storage only when acknowledged (or refused).

/** The part of the Web Storage API used (localStorage, or a test double). */
export interface StorageLike {
  readonly length: number;
  key(index: number): string | null;
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export interface Saved {
  events: string[];
  metrics: string[];
  /** Client id → when the item was first sent (ms), for the items sent at least once. */
  sentAt?: Record<string, number>;
}

/**
 * A stored item first sent longer ago than this is not sent again: the server remembers ids for 7
 * days, so a re-send after that could store twice an item whose first request (or beacon) had
 * arrived. A day's margin for clocks. Items never sent are kept however old.
 */
const RESEND_WINDOW_MS = 6 * 24 * 3600 * 1000;

export function browserStorage(): StorageLike | undefined {
  try {
    const s = (globalThis as { localStorage?: StorageLike }).localStorage;
    if (!s) return undefined;
    const probe = "vigil:probe";
    s.setItem(probe, "1");
    s.removeItem(probe);
    return s;
  } catch {
    return undefined; // disabled storage, sandboxed iframe, private mode quota 0
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The item's client id; anything but a UUID (a damaged or foreign entry) is not adopted. */
function idOf(json: string): string | undefined {
  try {
    const v = JSON.parse(json) as { id?: unknown };
    return typeof v?.id === "string" && UUID.test(v.id) ? v.id : undefined;
  } catch {
    return undefined;
  }
}

export class QueueStore {
  private readonly prefix: string;
  private readonly key: string;
  private scheduled = false;
  private failing = false;
  private latest: (() => Saved) | undefined;

  constructor(
    private readonly storage: StorageLike,
    apiKey: string,
    private readonly onError: (e: VigilError) => void,
  ) {
    this.prefix = `vigil:q:${fnv1a(apiKey)}:`;
    this.key = this.prefix + uuid();
  }

  /** Adopts every stored queue of this api key (removing those keys), items deduplicated by id, oldest key first. */
  adopt(now = Date.now()): Saved & { expired: string[] } {
    const keys: string[] = [];
    for (let i = 0; i < this.storage.length; i++) {
      const k = this.storage.key(i);
      if (k && k.startsWith(this.prefix) && k !== this.key) keys.push(k);
    }
    const seen = new Set<string>();
    const out: Saved & { expired: string[] } = { events: [], metrics: [], sentAt: {}, expired: [] };
    const loaded: { at: number; saved: Saved }[] = [];
    for (const k of keys) {
      try {
        const v = JSON.parse(this.storage.getItem(k) ?? "null") as { v?: number; at?: number } & Partial<Saved>;
        if (v && v.v === 1) {
          loaded.push({
            at: typeof v.at === "number" ? v.at : 0,
            saved: {
              events: Array.isArray(v.events) ? v.events.filter((x) => typeof x === "string") : [],
              metrics: Array.isArray(v.metrics) ? v.metrics.filter((x) => typeof x === "string") : [],
              sentAt: v.sentAt && typeof v.sentAt === "object" ? v.sentAt : {},
            },
          });
        }
      } catch {
        // a corrupt entry is removed below
      }
      this.storage.removeItem(k);
    }
    loaded.sort((a, b) => a.at - b.at);
    // The earliest first-send of each id over every entry (two tabs may have sent it).
    const firstSent = new Map<string, number>();
    for (const { saved } of loaded) {
      for (const [id, at] of Object.entries(saved.sentAt ?? {})) {
        if (typeof at === "number" && !(at >= (firstSent.get(id) ?? Infinity))) firstSent.set(id, at);
      }
    }
    for (const { saved } of loaded) {
      for (const kind of ["events", "metrics"] as const) {
        for (const json of saved[kind]) {
          const id = idOf(json);
          if (!id || seen.has(id)) continue;
          seen.add(id);
          const sent = firstSent.get(id);
          if (sent !== undefined && now - sent > RESEND_WINDOW_MS) {
            out.expired.push(id);
            continue;
          }
          if (sent !== undefined) out.sentAt![id] = sent;
          out[kind].push(json);
        }
      }
    }
    return out;
  }

  /** Saves `snapshot()` at the end of the current task (many calls in one task write once). */
  schedule(snapshot: () => Saved): void {
    this.latest = snapshot;
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => this.saveNow());
  }

  /** Writes now (page hide). */
  saveNow(snapshot?: () => Saved): void {
    if (snapshot) this.latest = snapshot;
    this.scheduled = false;
    if (!this.latest) return;
    const s = this.latest();
    try {
      if (s.events.length === 0 && s.metrics.length === 0) this.storage.removeItem(this.key);
      else this.storage.setItem(this.key, JSON.stringify({ v: 1, at: Date.now(), ...s }));
      this.failing = false;
    } catch (err) {
      // Reported once until a write succeeds again (a full quota would fail every write).
      if (this.failing) return;
      this.failing = true;
      this.onError(
        new VigilError("storage", `could not persist the queue: ${err instanceof Error ? err.message : String(err)}`),
      );
    }
  }
}

/** The browser's anonymous id and identified user, kept across loads. */
export class Identity {
  anonymousId: string | undefined;
  userId: string | undefined;

  /** `enabled`: a browser, or a storage given explicitly; otherwise (Node) there is no anonymous id. */
  constructor(
    private readonly storage: StorageLike | undefined,
    private readonly enabled: boolean,
  ) {
    if (!enabled) return;
    this.anonymousId = this.read("vigil:anonymousId") ?? uuid();
    this.write("vigil:anonymousId", this.anonymousId);
    this.userId = this.read("vigil:userId");
  }

  setUser(userId: string): void {
    this.userId = userId;
    this.write("vigil:userId", userId);
  }

  /** Logged out: a new anonymous id, no user. */
  reset(): void {
    this.userId = undefined;
    try {
      this.storage?.removeItem("vigil:userId");
    } catch {
      // ignore
    }
    if (this.enabled) {
      this.anonymousId = uuid();
      this.write("vigil:anonymousId", this.anonymousId);
    }
  }

  private read(k: string): string | undefined {
    try {
      return this.storage?.getItem(k) ?? undefined;
    } catch {
      return undefined;
    }
  }

  private write(k: string, v: string): void {
    try {
      this.storage?.setItem(k, v);
    } catch {
      // the id lives in memory for this page then
    }
  }
}
