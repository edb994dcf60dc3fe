// Keys kept out of what a server writes about a request (its log line, error messages): a ping URL
// (`/ping/:pingKey/...`) carries its key in the path, and a client may put any `vk_...` key in one by
// mistake. One rule for every place a path is written.

/** What a key is written as. */
const REDACTED = "[redacted]";

const KEY_SEGMENT = /^vk(_|%5f)/i;

/** `path` with the key segment of a ping URL, and any segment that looks like an API key, redacted. */
export function redactPath(path: string): string {
  if (!path.includes("/ping/") && !/vk(_|%5f)/i.test(path)) return path;
  const parts = path.split("/");
  return parts
    .map((part, i) => ((i === 2 && parts[1] === "ping") || KEY_SEGMENT.test(part) ? REDACTED : part))
    .join("/");
}
