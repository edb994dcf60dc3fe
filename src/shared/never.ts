// Exhaustive switches over a closed set (a table's keys, a union of kinds): the `default` branch
// calls assertNever, so a member the switch forgot is a compile error (its type is not `never`)
// instead of a silent fall-through. At run time it only fires for a value from outside the types.

export function assertNever(value: never, what = "value"): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}
