// A binary min-heap of (time, id) entries. Entries are never removed in place: its user (DueTimer,
// due-timer.ts) keeps the current time per id and skips popped entries that no longer match it (lazy deletion).

export interface Entry {
  at: number;
  id: string;
}

export class MinHeap {
  private a: Entry[] = [];

  get size(): number {
    return this.a.length;
  }

  peek(): Entry | undefined {
    return this.a[0];
  }

  push(e: Entry): void {
    const a = this.a;
    a.push(e);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p].at <= a[i].at) break;
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }

  pop(): Entry | undefined {
    const a = this.a;
    if (!a.length) return undefined;
    const top = a[0];
    const last = a.pop()!;
    if (a.length) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l].at < a[m].at) m = l;
        if (r < a.length && a[r].at < a[m].at) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top;
  }

  clear(): void {
    this.a = [];
  }
}
