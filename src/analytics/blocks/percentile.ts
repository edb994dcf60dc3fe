// Exact percentiles over unsorted values (pure): selection instead of a full sort.

/** Exact percentile_cont (PostgreSQL's interpolation) of unsorted values. */
export function percentileCont(values: Float64Array, p: number): number | null {
  const n = values.length;
  if (n === 0) return null;
  const pos = p * (n - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = select(values, lo);
  if (hi === lo) return a;
  const b = select(values, hi);
  return a + (b - a) * (pos - lo);
}

/** The k-th smallest value (0-based); reorders `a`. */
function select(a: Float64Array, k: number): number {
  let lo = 0;
  let hi = a.length - 1;
  while (hi > lo) {
    const pivot = a[(lo + hi) >>> 1];
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        const t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return a[k];
  }
  return a[k];
}
