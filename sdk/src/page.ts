import type { Item } from "./stream.js";
import { utf8Length } from "./util.js";

// A page's last moments: on `pagehide` and `visibilitychange: hidden` the queue is saved to storage
// and the queued events are sent with navigator.sendBeacon (text/plain, the publishable key in
// `?key=`: a beacon carries no headers). They STAY queued and stored: whether a beacon arrived is
// unknowable, so they are sent again by fetch (or on the next load) and the server stores each id once.

/** A beacon body stays under this: browsers allow about 64 KiB of beacon data in flight per page. */
export const BEACON_MAX_BYTES = 60 * 1024;
const MAX_EVENTS_PER_BATCH = 1000;

export interface PageHide {
  save(): void;
  /** The queued events, oldest first; undefined: no beacons (a secret key must not go in a URL). */
  beacon?: () => Item[];
  /** `${apiUrl}/v1/events/batch?key=<publishable key>` */
  url: string;
}

/** Listens for the page being hidden; returns the function that stops listening. */
export function watchPageHide(o: PageHide): () => void {
  const beaconed = new Set<string>();
  const onHide = () => {
    if (o.beacon) sendBeacons(o.url, o.beacon(), beaconed);
    o.save(); // with the beacons' first-send times
  };
  const onVisibility = () => {
    if (document.visibilityState === "hidden") onHide();
  };
  window.addEventListener("pagehide", onHide);
  document.addEventListener("visibilitychange", onVisibility);
  return () => {
    window.removeEventListener("pagehide", onHide);
    document.removeEventListener("visibilitychange", onVisibility);
  };
}

/**
 * Sends `items` in beacons under BEACON_MAX_BYTES, oldest first, each item at most once per page life
 * (`beaconed`). Stops at the first beacon the browser refuses (its in-flight quota is spent).
 */
function sendBeacons(url: string, items: Item[], beaconed: Set<string>): void {
  const nav = globalThis.navigator as Navigator | undefined;
  if (typeof nav?.sendBeacon !== "function") return;
  const overhead = utf8Length('{"events":[]}');
  let chunk: Item[] = [];
  let bytes = overhead;
  const ship = (): boolean => {
    if (!chunk.length) return true;
    const body = `{"events":[${chunk.map((i) => i.json).join(",")}]}`;
    let ok = false;
    try {
      ok = nav.sendBeacon(url, new Blob([body], { type: "text/plain" }));
    } catch {
      ok = false;
    }
    if (ok) {
      const now = Date.now();
      for (const i of chunk) {
        beaconed.add(i.id);
        i.sentAt ??= now;
      }
    }
    chunk = [];
    bytes = overhead;
    return ok;
  };
  for (const item of items) {
    if (beaconed.has(item.id) || item.bytes + overhead > BEACON_MAX_BYTES) continue;
    if (chunk.length && (bytes + item.bytes + 1 > BEACON_MAX_BYTES || chunk.length >= MAX_EVENTS_PER_BATCH)) {
      if (!ship()) return;
    }
    chunk.push(item);
    bytes += item.bytes + 1;
  }
  ship();
}
