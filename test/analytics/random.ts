import { OPERATOR_NAMES, OPERATORS } from "../../src/analytics/filters.js";

// The random events and filters of the filter property tests: the analytics fast paths against the
// JSON path (equivalence.test.ts) and the webhooks' JS evaluator against the SQL
// (test/webhooks/filters.test.ts). Each model is one linear congruential sequence from its seed, so
// a seed replays exactly.

export const T0 = Date.UTC(2024, 2, 4, 5, 17, 23, 456);
export const SPAN = 3 * 86_400_000;
export const TYPES = ["view", "click", "signup", "purchase"];
export const PLANS = ["free", "pro", "team", "Pro", "pro-x"];

export function randomModel(initialSeed: number) {
  let seed = initialSeed;
  const rnd = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];

  function randomEvent() {
    const data: Record<string, unknown> = {};
    if (rnd() < 0.9) data.plan = rnd() < 0.9 ? pick(PLANS) : pick([1, 2]);
    if (rnd() < 0.85) data.amount = rnd() < 0.9 ? Math.round(rnd() * 10_000) / 100 : pick(["12", null, true]);
    if (rnd() < 0.7) data.country = pick(["de", "fr", "us"]);
    if (rnd() < 0.3) data.meta = { depth: pick([1, 2, 3]) };
    return {
      type: pick(TYPES),
      timestamp: new Date(T0 + Math.floor(rnd() * SPAN)).toISOString(),
      userId: rnd() < 0.8 ? `u${Math.floor(rnd() * 30)}` : undefined,
      data,
      tags: { env: pick(["prod", "dev"]) },
    };
  }

  function randomCondition(): unknown {
    const field = pick([
      "plan",
      "data.plan",
      "amount",
      "data.amount",
      "country",
      "event",
      "userId",
      "meta.depth",
      "tags.env",
    ]);
    const numeric = field.includes("amount") || field.includes("depth");
    const v = () => (numeric ? pick([0, 12, 50, 99.5, 1, 2]) : pick([...PLANS, "de", "us", "view", "u3", "prod", 1]));
    // Every operator of the one list (src/analytics/filters.ts), its value made by its shape.
    const op = pick(OPERATOR_NAMES);
    const shape = OPERATORS[op];
    if (shape === "none") return { field, operator: op };
    if (shape === "list") return { field, operator: op, value: [v(), v()] };
    if (shape === "text") return { field, operator: op, value: pick(["p", "ro", "e", "x", "u"]) };
    if (shape === "order") return { field, operator: op, value: numeric ? v() : pick([1, 50]) };
    return { field, operator: op, value: v() };
  }

  /** A tree of up to two levels of and/or groups over `condition`s. */
  const randomFilter = (depth = 0, condition: () => unknown = randomCondition): unknown =>
    depth < 2 && rnd() < 0.4
      ? { [pick(["and", "or"])]: [randomFilter(depth + 1, condition), randomFilter(depth + 1, condition)] }
      : condition();

  return { rnd, pick, randomEvent, randomCondition, randomFilter };
}
