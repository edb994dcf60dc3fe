// Runs fn over items with at most `limit` calls in flight, in order of the list; stops taking new
// items once `more()` answers false. A rejection of fn rejects the whole (the others finish first
// their current item); callers that must go on catch inside fn.

export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
  more: () => boolean = () => true,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length && more()) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
