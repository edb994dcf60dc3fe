// Text PostgreSQL can store as given. `text` and `jsonb` refuse NUL (U+0000) outright, and a lone
// UTF-16 surrogate cannot be encoded as UTF-8 (it would be stored as U+FFFD, silently changed).
// Every string that enters through any protocol passes this check at the edge (see
// message-check.ts), so no such value ever reaches a statement, a group commit or a log line.

/** Why `s` cannot be stored as given, or undefined when it can. */
export function textProblem(s: string): string | undefined {
  if (s.includes("\0")) return "must not contain NUL (U+0000)";
  if (!s.isWellFormed()) return "must not contain unpaired UTF-16 surrogates";
  return undefined;
}

/** True when `s` can be stored as given (the same rule as textProblem). */
export const isStorableText = (s: string): boolean => !s.includes("\0") && s.isWellFormed();
