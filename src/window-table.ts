/**
 * `MemoryStore`'s budget windows: store key → start, count and end, held in typed-array pages
 * rather than one object per window (three numbers cost 24 bytes here, an object with two boxed
 * times about twice that). A forgotten window's slot is reused, and a page whose windows have all
 * been forgotten is dropped, so memory is given back as windows end.
 */
import { ShardedMap } from "./sharded-map.js";
import type { WindowRecord } from "./store.js";

/** Windows per page; a page is allocated when the ones before are full, never moved. */
const PAGE = 4096;
const STRIDE = 3; // start, count, end

/** One page: its numbers, how many slots are live, the next never-used slot, and slots freed since. */
interface Page {
  readonly data: Float64Array;
  live: number;
  next: number;
  readonly free: number[];
}

const hasRoom = (page: Page | undefined): boolean => page === undefined || page.free.length > 0 || page.next < PAGE;

export class WindowTable {
  private readonly slots = new ShardedMap<number>();
  private readonly pages: (Page | undefined)[] = [];
  /** The page new windows go to while it has room. */
  private current = 0;
  /**
   * The two slots last looked up, newest first: a charge reads its windows and then writes them, by
   * the same keys (two for most requests: general and the operation's own budget).
   */
  private key0: string | undefined;
  private slot0 = -1;
  private key1: string | undefined;
  private slot1 = -1;

  private allocate(): number {
    if (!hasRoom(this.pages[this.current])) {
      let p = 0;
      while (p < this.pages.length && !hasRoom(this.pages[p])) p++;
      this.current = p;
    }
    const p = this.current;
    const page = (this.pages[p] ??= { data: new Float64Array(PAGE * STRIDE), live: 0, next: 0, free: [] });
    page.live++;
    return p * PAGE + (page.free.length > 0 ? page.free.pop()! : page.next++);
  }

  private release(slot: number): void {
    const p = (slot / PAGE) | 0;
    const page = this.pages[p]!;
    if (--page.live === 0 && p !== this.current) this.pages[p] = undefined;
    else page.free.push(slot % PAGE);
  }

  private data(slot: number): Float64Array {
    return this.pages[(slot / PAGE) | 0]!.data;
  }

  get size(): number {
    return this.slots.size;
  }

  /** The slot of `key` when it is one of the two remembered. */
  private remembered(key: string): number | undefined {
    return key === this.key0 ? this.slot0 : key === this.key1 ? this.slot1 : undefined;
  }

  private slotOf(key: string): number | undefined {
    const known = this.remembered(key);
    if (known !== undefined) return known;
    const slot = this.slots.get(key);
    if (slot !== undefined) this.remember(key, slot);
    return slot;
  }

  private remember(key: string, slot: number): void {
    this.key1 = this.key0;
    this.slot1 = this.slot0;
    this.key0 = key;
    this.slot0 = slot;
  }

  /** The window under `key`, as a fresh record. */
  get(key: string): (WindowRecord & { expiresAt: number }) | undefined {
    return this.read(key, { start: 0, count: 0, expiresAt: 0 });
  }

  /**
   * The window under `key`, written into `into` (no record per read: the caller reads it at once and
   * keeps nothing); undefined when there is none.
   */
  read(key: string, into: { start: number; count: number; expiresAt: number }): (WindowRecord & { expiresAt: number }) | undefined {
    const slot = this.slotOf(key);
    if (slot === undefined) return undefined;
    const page = this.data(slot);
    const at = (slot % PAGE) * STRIDE;
    into.start = page[at]!;
    into.count = page[at + 1]!;
    into.expiresAt = page[at + 2]!;
    return into;
  }

  /** When the window under `key` ends; undefined when there is none. */
  expiresAt(key: string): number | undefined {
    const slot = this.slotOf(key);
    return slot === undefined ? undefined : this.data(slot)[(slot % PAGE) * STRIDE + 2];
  }

  /** Writes the window; true when it is new or its end moved (the expiry wheel needs the new end). */
  set(key: string, start: number, count: number, expiresAt: number): boolean {
    let slot = this.slotOf(key);
    const fresh = slot === undefined;
    if (slot === undefined) {
      slot = this.allocate();
      this.slots.set(key, slot);
      this.remember(key, slot);
    }
    const page = this.data(slot);
    const at = (slot % PAGE) * STRIDE;
    const moved = fresh || page[at + 2] !== expiresAt;
    page[at] = start;
    page[at + 1] = count;
    page[at + 2] = expiresAt;
    return moved;
  }

  delete(key: string): void {
    // looked up without remembering it: a key on its way out would push a live one from the cache
    const slot = this.remembered(key) ?? this.slots.get(key);
    if (slot === undefined) return;
    this.slots.delete(key);
    this.release(slot);
    // its slot may be reused by another key
    if (key === this.key0) this.key0 = undefined;
    if (key === this.key1) this.key1 = undefined;
  }
}
