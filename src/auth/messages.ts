import type { AccountRow } from "./store.js";

// Account rows → the API's messages (never the password hash).

export const toAccount = (r: AccountRow) => ({
  id: r.id,
  email: r.email,
  name: r.name ?? undefined,
  createdAt: r.created_at.toISOString(),
});
