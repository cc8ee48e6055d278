/**
 * A bounded cache of values built from a string key, for keys that come back: a hot credential's
 * subject and store keys, built once and then found. Cleared when full. When a fill brought fewer
 * hits than entries (the keys do not come back: many credentials in rotation, a million of them),
 * it admits no new key for the next eight fills' worth of misses, so that values built for one use
 * are not kept until the next clear (long enough for the garbage collector to move them to the old
 * generation, for nothing: at 1 000 000 credentials that cost a third of a check).
 */
export class Recent<V> {
  private readonly entries = new Map<string, V>();
  /** Hits since the last clear. */
  private hits = 0;
  /** Misses still to go unadmitted. */
  private skip = 0;

  /** @param max - entries at most. */
  constructor(private readonly max: number) {}

  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) this.hits++;
    return value;
  }

  /**
   * Whether the value of a miss is to be kept: asked once per miss, before the value is built, so
   * that a value built for one use can be built differently (see store-keys.ts `SubjectKeys`).
   * False while the cache sits out; when full, it is cleared first.
   */
  admit(): boolean {
    if (this.skip > 0) {
      this.skip--;
      return false;
    }
    if (this.entries.size >= this.max) {
      if (this.hits < this.max) this.skip = 8 * this.max;
      this.hits = 0;
      this.entries.clear();
      if (this.skip > 0) return false;
    }
    return true;
  }

  /** Keeps `value` under `key`: for a miss that {@link admit} admitted. */
  set(key: string, value: V): void {
    this.entries.set(key, value);
  }

  get size(): number {
    return this.entries.size;
  }
}
