import { notFound } from "./errors.js";
import { isDeadlock, isForeignKeyViolation } from "./pg-errors.js";

// A write whose project is deleted while it is in flight: the credentials were checked before the
// delete committed, the insert ran after it, and PostgreSQL reports a foreign-key violation on the
// project (or on a row the delete cascaded away: a monitor), or a metric row is found gone (removed
// by the purge of the deleted project). That is no server error: the request answers as one made
// after the delete does. The delete's cascade and a write's transaction
// can also lock rows in opposite orders; PostgreSQL then aborts one of them (deadlock_detected), and
// that one is simply run again.

/** Thrown by a write that finds rows it has just written for its project gone with the project. */
export class ProjectGoneError extends Error {
  constructor() {
    super("the project was deleted during the write");
  }
}

const DEADLOCK_ATTEMPTS = 3;

/**
 * Runs `work` (a whole transaction or one statement), again when PostgreSQL chose it as a deadlock
 * victim, up to `attempts` times; each retry after the first waits a few random milliseconds, so
 * the two sides do not meet again in step.
 */
export async function retryDeadlock<T>(work: () => Promise<T>, attempts = DEADLOCK_ATTEMPTS): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (!isDeadlock(err) || attempt >= attempts) throw err;
      if (attempt > 1) await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
    }
  }
}

/**
 * Runs `write` (retried if it lost a deadlock); when it fails because the project is gone, runs
 * `recheck` (the route's own credential check, again), which throws what a request after the delete
 * gets: 401 for an API key the delete removed, 404 for a member session. Should the project still be
 * there, the row the write needed was deleted with something else: 404 as well. Other errors pass.
 */
export async function unlessProjectGone<T>(write: () => Promise<T>, recheck: () => Promise<unknown>): Promise<T> {
  try {
    return await retryDeadlock(write);
  } catch (err) {
    if (!isForeignKeyViolation(err) && !(err instanceof ProjectGoneError)) throw err;
    await recheck();
    throw notFound("project");
  }
}
