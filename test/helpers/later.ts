// Stand-ins for what a test file's before() hook makes (useApp, useReceiver, useTimeSkipping): usable
// in any hook or test of the file, not at its top level, where nothing is started yet.

/** An object that reads through to the value `get` returns once the before() hook has set it. */
export function later<T extends object>(get: () => T | undefined, what: string): T {
  const target = (): T => {
    const v = get();
    if (v === undefined) throw new Error(`${what} is used before the file's before() hook made it`);
    return v;
  };
  return new Proxy({} as T, {
    get(_, key) {
      const v = target();
      const x = Reflect.get(v, key, v);
      return typeof x === "function" ? x.bind(v) : x;
    },
    has: (_, key) => Reflect.has(target(), key),
    ownKeys: () => Reflect.ownKeys(target()),
    getOwnPropertyDescriptor: (_, key) => {
      const d = Reflect.getOwnPropertyDescriptor(target(), key);
      return d && { ...d, configurable: true };
    },
  });
}
