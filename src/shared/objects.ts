/**
 * Object.assign for JSON data: a key named `__proto__` (which JSON.parse keeps as an own key) is
 * copied as data instead of replacing the target's prototype.
 */
export function assignJson(target: Record<string, unknown>, source: Record<string, unknown>): Record<string, unknown> {
  for (const k of Object.keys(source)) {
    if (k === "__proto__") Object.defineProperty(target, k, { value: source[k], writable: true, enumerable: true, configurable: true });
    else target[k] = source[k];
  }
  return target;
}
