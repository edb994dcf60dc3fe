/**
 * Object.assign for JSON data: a key named `__proto__` (which JSON.parse keeps as an own key) is
 * copied as data instead of replacing the target's prototype.
 */
export function assignJson(target: Record<string, unknown>, source: Record<string, unknown>): Record<string, unknown> {
  for (const k of Object.keys(source)) setOwn(target, k, source[k]);
  return target;
}

/** `target[key] = value`, except that a key named `__proto__` becomes an own data key. */
export function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  if (key === "__proto__")
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  else target[key] = value;
}
