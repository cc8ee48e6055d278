/**
 * `MemoryStore`'s budget windows, kept together per subject: subject → a group of two windows
 * (start, count and end each, and the other window's three, tagged with the budget's id), chained to another group when a subject
 * has more budgets open. A request charges two budgets of one subject (general and the operation's
 * own), so both are found with one Map lookup: at 1 000 000 credentials each lookup is a walk
 * through memory the processor has not seen for a while, and the second one cost a fifth of a check.
 *
 * The numbers live in typed-array pages rather than one object per window. A forgotten group's slot
 * is reused, and a page whose groups have all been forgotten is dropped, so memory is given back as
 * windows end.
 */
import { ShardedMap } from "./sharded-map.js";
import type { OtherWindow, WindowRecord } from "./store.js";

/** Groups per page; a page is allocated when the ones before are full, never moved. */
const PAGE = 2048;
/** Windows per group. */
const WIDE = 2;
/** Numbers per window: start, count, end, then the other window's start, count and end (count 0: none). */
const NUMBERS = 6;
const STRIDE = NUMBERS * WIDE;
/** Tags per group: each window's budget id (0: empty), then the next group of the chain + 1 (0: none). */
const TAGS = WIDE + 1;

/** One page: its numbers and tags, how many groups are live, the next never-used group, and groups freed since. */
interface Page {
  readonly data: Float64Array;
  readonly tags: Int32Array;
  live: number;
  next: number;
  readonly free: number[];
}

const hasRoom = (page: Page | undefined): boolean => page === undefined || page.free.length > 0 || page.next < PAGE;

/** When a window and the other one kept beside it (a count of 0: none) have both ended. */
export const forgetTime = (end: number, otherCount: number, otherEnd: number): number => (otherCount > 0 && otherEnd > end ? otherEnd : end);

/**
 * A window as read, into a record the caller owns and reuses: its start, count and end, and the
 * other window kept beside it read from the table only when asked for (a charge in an open window,
 * nearly every one, never asks).
 */
const EMPTY = new Float64Array(NUMBERS);

export class WindowView implements WindowRecord {
  start = 0;
  count = 0;
  expiresAt = 0;
  /** Where the numbers are: set by {@link WindowTable.readAt}. */
  data: Float64Array = EMPTY;
  offset = 0;
  /** The other window kept beside it, read from the table (a new record each time; none: undefined). */
  get other(): OtherWindow | undefined {
    const data = this.data;
    const offset = this.offset;
    return data[offset + 4]! > 0 ? { start: data[offset + 3]!, count: data[offset + 4]!, expiresAt: data[offset + 5]! } : undefined;
  }
}

/** A window's place: its group and its index in the group (`group * WIDE + index`); -1 when there is none. */
type Place = number;

export class WindowTable {
  /** Subject → the first group of its chain. */
  private readonly heads = new ShardedMap<number>();
  private readonly pages: (Page | undefined)[] = [];
  /** Budget name → id (from 1); names come from the configs, so there are few. */
  private readonly ids = new Map<string, number>();
  /** The page new groups go to while it has room. */
  private current = 0;
  private windows = 0;
  private deleted = 0;
  /** The subject last looked up and its first group: a charge reads its windows and then writes them. */
  private lastSubject: string | undefined;
  private lastHead = -1;

  /** Windows held. */
  get size(): number {
    return this.windows;
  }

  /** Windows deleted so far: a place ({@link locate}) is good while this has not changed. */
  get deletions(): number {
    return this.deleted;
  }

  /** The last two budget names looked up and their ids: a charge reads a request's two budgets, and the next request's are the same two. */
  private name0: string | undefined;
  private id0 = 0;
  private name1: string | undefined;
  private id1 = 0;

  /** The id of a budget name, the same for the table's life (the expiry wheel keeps it). */
  idOf(budget: string): number {
    if (budget === this.name0) return this.id0;
    if (budget === this.name1) return this.id1;
    let id = this.ids.get(budget);
    if (id === undefined) this.ids.set(budget, (id = this.ids.size + 1));
    this.name1 = this.name0;
    this.id1 = this.id0;
    this.name0 = budget;
    this.id0 = id;
    return id;
  }

  private page(group: number): Page {
    return this.pages[(group / PAGE) | 0]!;
  }

  private allocate(): number {
    if (!hasRoom(this.pages[this.current])) {
      let p = 0;
      while (p < this.pages.length && !hasRoom(this.pages[p])) p++;
      this.current = p;
    }
    const p = this.current;
    const page = (this.pages[p] ??= { data: new Float64Array(PAGE * STRIDE), tags: new Int32Array(PAGE * TAGS), live: 0, next: 0, free: [] });
    page.live++;
    const local = page.free.length > 0 ? page.free.pop()! : page.next++;
    page.tags.fill(0, local * TAGS, local * TAGS + TAGS);
    return p * PAGE + local;
  }

  private release(group: number): void {
    const p = (group / PAGE) | 0;
    const page = this.pages[p]!;
    if (--page.live === 0 && p !== this.current) this.pages[p] = undefined;
    else page.free.push(group % PAGE);
  }

  private headOf(subject: string): number | undefined {
    if (subject === this.lastSubject) return this.lastHead;
    const head = this.heads.get(subject);
    if (head !== undefined) {
      this.lastSubject = subject;
      this.lastHead = head;
    }
    return head;
  }

  /** The tag at `index` of `group` (an index of WIDE is the chain's next group + 1). */
  private tag(group: number, index: number): number {
    return this.page(group).tags[(group % PAGE) * TAGS + index]!;
  }

  private setTag(group: number, index: number, value: number): void {
    this.page(group).tags[(group % PAGE) * TAGS + index] = value;
  }

  /** Where the window of budget `id` is in the chain from `head`, or -1. */
  private find(head: number, id: number): Place {
    for (let group = head; ; ) {
      for (let i = 0; i < WIDE; i++) if (this.tag(group, i) === id) return group * WIDE + i;
      const next = this.tag(group, WIDE);
      if (next === 0) return -1;
      group = next - 1;
    }
  }

  /** The numbers of the group `place` is in. */
  private dataOf(place: Place): Float64Array {
    return this.page((place / WIDE) | 0).data;
  }

  /** Where the numbers of `place` start in {@link dataOf}. */
  private offsetOf(place: Place): number {
    return (((place / WIDE) | 0) % PAGE) * STRIDE + (place % WIDE) * NUMBERS;
  }

  /**
   * Where the window of `subject`'s budget `id` is (-1: none), for {@link readAt} and
   * {@link writeAt}. A place stays good until a window is deleted (writes move no window).
   */
  locate(subject: string, id: number): Place {
    const head = this.headOf(subject);
    return head === undefined ? -1 : this.find(head, id);
  }

  /** The window at `place` (from {@link locate}), written into `into` (its other window read through it). */
  readAt(place: Place, into: WindowView): WindowView {
    const data = this.dataOf(place);
    const offset = this.offsetOf(place);
    into.start = data[offset]!;
    into.count = data[offset + 1]!;
    into.expiresAt = data[offset + 2]!;
    into.data = data;
    into.offset = offset;
    return into;
  }

  /**
   * Writes the window at `place` (from {@link locate}), the other one kept beside it as it is; true
   * when its end moved (then the time both end by may have: {@link expiresAt} tells).
   */
  writeAt(place: Place, start: number, count: number, expiresAt: number): boolean {
    const data = this.dataOf(place);
    const offset = this.offsetOf(place);
    const moved = data[offset + 2] !== expiresAt;
    data[offset] = start;
    data[offset + 1] = count;
    data[offset + 2] = expiresAt;
    return moved;
  }

  /** Writes the window at `place` (from {@link locate}) and the other one kept beside it (count 0: none); true when the time both end by moved. */
  writePairAt(place: Place, start: number, count: number, expiresAt: number, otherStart: number, otherCount: number, otherEnd: number): boolean {
    const data = this.dataOf(place);
    const offset = this.offsetOf(place);
    const moved = forgetTime(data[offset + 2]!, data[offset + 4]!, data[offset + 5]!) !== forgetTime(expiresAt, otherCount, otherEnd);
    data[offset] = start;
    data[offset + 1] = count;
    data[offset + 2] = expiresAt;
    data[offset + 3] = otherStart;
    data[offset + 4] = otherCount;
    data[offset + 5] = otherEnd;
    return moved;
  }

  /** The window of `subject`'s budget `id`, as a fresh record (for tests and tools; the store reads by place). */
  get(subject: string, id: number): (WindowRecord & { expiresAt: number }) | undefined {
    const place = this.locate(subject, id);
    if (place < 0) return undefined;
    const view = this.readAt(place, new WindowView());
    const other = view.other;
    return other === undefined ? { start: view.start, count: view.count, expiresAt: view.expiresAt } : { start: view.start, count: view.count, expiresAt: view.expiresAt, other };
  }

  /** When the window of `subject`'s budget `id` and the other one kept beside it have both ended; undefined when there is none. */
  expiresAt(subject: string, id: number): number | undefined {
    const place = this.locate(subject, id);
    if (place < 0) return undefined;
    const data = this.dataOf(place);
    const offset = this.offsetOf(place);
    return forgetTime(data[offset + 2]!, data[offset + 4]!, data[offset + 5]!);
  }

  /** A place for a new window of budget `id` in the chain from `head`: an empty one, or a new group linked at the end. */
  private vacancy(head: number, id: number): Place {
    let group = head;
    for (;;) {
      for (let i = 0; i < WIDE; i++) {
        if (this.tag(group, i) === 0) {
          this.setTag(group, i, id);
          return group * WIDE + i;
        }
      }
      const next = this.tag(group, WIDE);
      if (next === 0) break;
      group = next - 1;
    }
    const added = this.allocate();
    this.setTag(group, WIDE, added + 1);
    this.setTag(added, 0, id);
    return added * WIDE;
  }

  /**
   * Writes the window, and the other one kept beside it when `pair` (else an existing window's other
   * stays, and a new window has none); true when it is new or the time it and the other one end by
   * moved (the expiry wheel needs it: {@link expiresAt}).
   */
  set(subject: string, id: number, start: number, count: number, expiresAt: number, pair = false, otherStart = 0, otherCount = 0, otherEnd = 0): boolean {
    const head = this.headOf(subject);
    const place = head === undefined ? -1 : this.find(head, id);
    if (place >= 0) return pair ? this.writePairAt(place, start, count, expiresAt, otherStart, otherCount, otherEnd) : this.writeAt(place, start, count, expiresAt);
    this.windows++;
    const added = head === undefined ? this.newChain(subject, id) : this.vacancy(head, id);
    this.writePairAt(added, start, count, expiresAt, pair ? otherStart : 0, pair ? otherCount : 0, pair ? otherEnd : 0);
    return true;
  }

  /** The first group of a subject that has none yet, with budget `id`'s window in its first place. */
  private newChain(subject: string, id: number): Place {
    const group = this.allocate();
    this.heads.set(subject, group);
    this.lastSubject = subject;
    this.lastHead = group;
    this.setTag(group, 0, id);
    return group * WIDE;
  }

  /** Forgets the window of `subject`'s budget `id`; the subject's groups go once all its windows have. */
  delete(subject: string, id: number): void {
    // looked up without remembering it: a subject on its way out would push a live one from the cache
    const head = subject === this.lastSubject ? this.lastHead : this.heads.get(subject);
    if (head === undefined) return;
    const place = this.find(head, id);
    if (place < 0) return;
    this.setTag((place / WIDE) | 0, place % WIDE, 0);
    this.windows--;
    this.deleted++;
    for (let group = head; ; ) {
      for (let i = 0; i < WIDE; i++) if (this.tag(group, i) !== 0) return;
      const next = this.tag(group, WIDE);
      if (next === 0) break;
      group = next - 1;
    }
    for (let group = head, next = 0; ; group = next - 1) {
      next = this.tag(group, WIDE);
      this.release(group);
      if (next === 0) break;
    }
    this.heads.delete(subject);
    // its groups may be reused by another subject
    if (subject === this.lastSubject) this.lastSubject = undefined;
  }
}
