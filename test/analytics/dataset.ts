// The fixed data set whose answers are known by hand (2024-01-01 is a Monday).
export const EVENTS = [
  {
    type: "signup",
    timestamp: "2024-01-01T00:00:00.000Z",
    userId: "u1",
    groupId: "g1",
    source: "web",
    data: { plan: "pro", amount: 10, nested: { a: { b: "deep" } }, flag: true, when: "2024-01-01T12:00:00Z" },
    context: { page: { path: "/home" } },
    tags: { env: "prod" },
  },
  {
    type: "signup",
    timestamp: "2024-01-01T00:59:59.999Z",
    userId: "u2",
    data: { plan: "free", amount: 20 },
    tags: { env: "dev" },
  },
  {
    type: "purchase",
    timestamp: "2024-01-01T01:00:00.000Z",
    userId: "u1",
    data: { plan: "pro", amount: 30, note: 'it\'s; a "test" \\ here' },
    context: { page: { path: "/buy" } },
  },
  { type: "purchase", timestamp: "2024-01-07T23:59:59.999Z", userId: "u3", data: { plan: "pro", amount: "40" } },
  {
    type: "purchase",
    timestamp: "2024-01-08T00:00:00.000Z",
    userId: "u3",
    groupId: "g2",
    source: "web",
    data: { plan: "team", amount: 50 },
  },
  { type: "view", timestamp: "2024-01-31T23:59:59.999Z", data: { plan: null, amount: 60.5 } },
  { type: "view", timestamp: "2024-02-01T00:00:00.000Z", userId: "u2", data: { amount: 70 } },
  { type: "view", timestamp: "2024-02-29T12:00:00.000Z", userId: "u4" },
];

export const ALL = { start: "2024-01-01T00:00:00Z", end: "2024-03-01T00:00:00Z" };
