/**
 * The embedded default store: counters in Maps of this process. A charge runs synchronously, so it
 * is atomic within the process. Expired windows, past days' caps and idempotency records are
 * forgotten a few at a time on every call (an expiry wheel keyed by when each entry ends), so
 * memory stays bounded as credentials come and go and no call pays for a scan of everything.
 */
import { readWindow, runCharge, runRelease } from "./charge.js";
import { CAP_KEEP_MS, type BudgetCharge, type ChargeOutcome, type ChargeRequest, type CounterTx, type KeyRecord, type PolicyStore, type RecordTicket, type ResetRequest, type WindowReading, type WindowRecord } from "./store.js";
import { heapPop, heapPush } from "./min-heap.js";
import { ShardedMap } from "./sharded-map.js";
import { budgetKeyParts } from "./store-keys.js";
import { WindowTable, WindowView } from "./window-table.js";
import type { ReleaseTicket } from "./types.js";

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * How many due entries one call may forget (default 64). Each charge creates at most five
   * entries, so the default keeps up with any load; a call never does more than this much expiry work.
   */
  expirePerCall?: number;
  /** @deprecated Since expiry became incremental this does nothing; use `expirePerCall`. */
  sweepEvery?: number;
}

/** Wheel slot width: entries due in the same second share a slot. */
const SLOT_MS = 1000;

/** What a wheel entry is: a cap day, an idempotency record, or (from WINDOW up) the window of budget id `kind - WINDOW`. */
const CAP_DAY = 0;
const KEY_RECORD = 1;
const WINDOW = 2;

/** A budget charge that names its subject and budget (`createPolicy`'s always do). */
type WithParts = BudgetCharge & { readonly subject: string; readonly budget: string };
const hasParts = (b: BudgetCharge): b is WithParts => b.subject !== undefined && b.budget !== undefined;

/**
 * Which window a key is, for a charge built by hand without its parts and for a reset (which names
 * keys): the subject and budget it spells, or, for a key that spells none, the key alone ("" names
 * no budget a key spells, so that window is the key's own).
 */
function partsOfKey(key: string): { readonly subject: string; readonly budget: string } {
  return budgetKeyParts(key) ?? { subject: key, budget: "" };
}

interface CapDay {
  readonly resetAt: number;
  readonly members: Set<string>;
}

/**
 * Counters for one server process. Use `RedisStore` (`newsletter-policy/redis`) to share budgets
 * between processes.
 *
 * @example
 * const policy = createPolicy({ store: new MemoryStore(), clock: () => Date.now() });
 */
export class MemoryStore implements PolicyStore {
  private readonly windows = new WindowTable();
  /** Cap days, by `key` + NUL + day: each day counts on its own (a clock step never wipes another day's count). */
  private readonly capDays = new ShardedMap<CapDay>();
  private readonly keys = new ShardedMap<KeyRecord>();
  private members = 0;
  /**
   * This store's own part of every cap charge's name (`m<tag>.<n>`): a ticket of another store (one
   * sent through JSON to another process, an insured ticket, a ticket from before a restart) names
   * no charge of this one. With names `m1`, `m2`, … in every store, such a ticket uncounted another
   * send of the same name, and the cap admitted one more than its limit (found by an operating
   * review). Random, as RedisStore's instance id is: made once, when the store is, never per decision.
   */
  private readonly tag = Array.from(globalThis.crypto.getRandomValues(new Uint32Array(2)), (n) => n.toString(36)).join("");
  private readonly expirePerCall: number;
  /** The expiry wheel: slot (expiry / SLOT_MS) → entries that may be due then; slots in a min-heap. */
  private readonly slots = new Map<number, { keys: string[]; kinds: number[] }>();
  private readonly heap: number[] = [];
  /** The previous call's `now`: an entry is forgotten only once both this and the current call's `now` have passed its end. */
  private last: number | undefined;

  /** @param options - `expirePerCall` (default 64). */
  constructor(options: MemoryStoreOptions = {}) {
    this.expirePerCall = Math.max(1, Math.floor(options.expirePerCall ?? 64));
  }

  /**
   * Checks and charges one request, all or nothing; synchronous, so atomic within the process.
   *
   * @param request - every budget, the idempotency key and the cap of one request (built by `createPolicy`).
   * @returns what was charged, or why not, with each budget's window after the call.
   * @example
   * const outcome = store.charge({ id: "req_1", now: Date.now(), budgets: [{ key: "b:general", limit: 600, windowMs: 60_000 }], refused: false });
   */
  charge(request: ChargeRequest): ChargeOutcome {
    // charged first, then due entries forgotten: the charge reads its own windows as they were (a
    // window that ended is kept beside the new one, charge.ts readOpen). Forgotten first, two calls
    // stamped a day ahead deleted the credential's spent window before the second one read it, and
    // back at the right time it admitted afresh: 5 reads in a minute on a budget of 3, where
    // `evaluate` kept it (found by a review of the two-window change)
    const outcome = runCharge(this.tx, request);
    this.expire(request.now, this.expirePerCall);
    return outcome;
  }

  /**
   * Uncounts one cap charge and lets its idempotency key count again; idempotent.
   *
   * @param ticket - `decision.release` of an allowed send, schedule or test send.
   * @param now - ms since the epoch (the PolicyStore signature; a release is the same at any time).
   * @returns true when the charge was still counted.
   * @example
   * if (decision.release) store.release(decision.release, Date.now());
   */
  release(ticket: ReleaseTicket, now: number): boolean {
    return runRelease(this.tx, ticket);
  }

  /**
   * Forgets an idempotency record, but only the one a charge wrote (same fingerprint and end, no cap
   * charge in it): `createPolicy` calls it for a keyed charge made after the store gave up on it.
   * MemoryStore never gives up on a charge; it is here for the contract, and for a store built on it
   * (a store that wraps one, and may time out).
   *
   * @param record - the key, fingerprint and end of the record one charge wrote.
   * @param now - ms since the epoch (the PolicyStore signature).
   * @returns true when the record was that one, and is forgotten.
   * @example
   * store.forget({ key: "i:key_1:k1", fingerprint: "…", expiresAt: Date.now() + 86_400_000 }, Date.now());
   */
  forget(record: RecordTicket, now: number): boolean {
    const kept = this.keys.get(record.key);
    if (kept === undefined || kept.fingerprint !== record.fingerprint || kept.counted !== undefined || !(Math.abs(kept.expiresAt - record.expiresAt) < 1)) return false;
    this.keys.delete(record.key);
    return true;
  }

  /**
   * Reads budgets without charging, for `GET /rate-limit`.
   *
   * @param budgets - the budgets to read.
   * @param now - ms since the epoch.
   * @returns one reading per budget; `{ count: 0, resetAt: 0 }` when no window is open.
   * @example
   * const [general] = store.read([{ key: "b:general", limit: 600, windowMs: 60_000 }], Date.now());
   */
  read(budgets: readonly BudgetCharge[], now: number): WindowReading[] {
    return budgets.map((b) => readWindow(this.tx, b, now));
  }

  /**
   * Clears exactly what the request names (`policy.reset` builds it): budget windows, one day's
   * count of daily caps, and every idempotency record under one scope. Idempotency records are
   * found by walking this store's keys: O(records held), fine for an operator's action.
   *
   * @param request - what to clear.
   * @param _now - the time of the reset (PolicyStore's signature; this store clears by the request alone).
   * @example
   * await policy.reset({ credential }); // calls store.reset(...) with the credential's keys
   */
  reset(request: ResetRequest, _now?: number): void {
    for (const key of request.windows) {
      const { subject, budget } = partsOfKey(key);
      this.windows.delete(subject, this.windows.idOf(budget));
    }
    // that day's count only; the idempotency records keep their charge, so a retry stays a replay
    for (const cap of request.caps) this.capDays.delete(`${cap.key}\u0000${cap.day}`);
    if (request.idempotencyScope !== undefined) {
      const prefix = `${request.idempotencyScope}:`;
      for (const key of this.keys.keys()) if (key.startsWith(prefix)) this.keys.delete(key);
    }
  }

  /**
   * Entries held: open windows, cap days and idempotency records (for tests and metrics).
   *
   * @example
   * metrics.gauge("policy.memory_store.entries", store.size);
   */
  get size(): number {
    return this.windows.size + this.capDays.size + this.keys.size;
  }

  /**
   * Forgets every entry that has expired by `now`, at once. Not needed for a bounded memory (every
   * call already forgets up to `expirePerCall` due entries); for a process that goes quiet after a
   * burst. Its work grows with the entries due, so prefer a timer over calling it per request.
   *
   * @param now - ms since the epoch; trusted as given (a `now` days ahead forgets today's counts).
   * @example
   * setInterval(() => store.sweep(Date.now()), 60_000).unref(); // for a quiet process
   */
  sweep(now: number): void {
    this.last = now;
    this.expire(now, Infinity);
  }

  /** @param key - the entry's key (a window's: its subject). */
  private schedule(kind: number, key: string, expiresAt: number): void {
    const slot = Math.ceil(expiresAt / SLOT_MS);
    let list = this.slots.get(slot);
    if (list === undefined) {
      list = { keys: [], kinds: [] };
      this.slots.set(slot, list);
      heapPush(this.heap, slot);
    }
    list.keys.push(key);
    list.kinds.push(kind);
  }

  /** Forgets up to `budget` due entries, by the time both this call and the previous one have passed. */
  private expire(now: number, budget: number): void {
    const settled = this.last === undefined ? now : Math.min(now, this.last);
    this.last = now;
    let work = 0;
    while (work < budget && this.heap.length > 0) {
      const slot = this.heap[0]!;
      if (slot * SLOT_MS > settled) return;
      const list = this.slots.get(slot)!;
      while (work < budget && list.keys.length > 0) {
        const key = list.keys.pop()!;
        const kind = list.kinds.pop()!;
        work++;
        // an entry given another end since (a new window under the same key) has a wheel entry for that end too
        if (kind >= WINDOW) {
          const end = this.windows.expiresAt(key, kind - WINDOW);
          if (end !== undefined && settled >= end) this.windows.delete(key, kind - WINDOW);
        } else if (kind === CAP_DAY) {
          const entry = this.capDays.get(key);
          if (entry !== undefined && settled >= entry.resetAt + CAP_KEEP_MS) this.capDays.delete(key);
        } else {
          const entry = this.keys.get(key);
          if (entry !== undefined && settled >= entry.expiresAt) this.keys.delete(key);
        }
      }
      if (list.keys.length === 0) {
        this.slots.delete(slot);
        heapPop(this.heap);
      }
    }
  }

  /** What `tx.window` hands the charge algorithm, which reads it at once (readWindow) and keeps nothing. */
  private readonly scratch = new WindowView();

  /**
   * The last two windows read, by their budget charge, newest first, each with the table's count of
   * deletions then: the charge algorithm reads every budget and then writes them, so a write finds
   * its window's place without a second lookup. A place is good until a window is deleted (writes
   * move no window), which the count tells: no caller has to remember to forget them.
   */
  private read0: BudgetCharge | undefined;
  private place0 = -1;
  private deletions0 = -1;
  private read1: BudgetCharge | undefined;
  private place1 = -1;
  private deletions1 = -1;

  private readWindowOf(b: BudgetCharge): WindowRecord | undefined {
    const { subject, budget } = hasParts(b) ? b : partsOfKey(b.key);
    const place = this.windows.locate(subject, this.windows.idOf(budget));
    this.read1 = this.read0;
    this.place1 = this.place0;
    this.deletions1 = this.deletions0;
    this.read0 = b;
    this.place0 = place;
    this.deletions0 = this.windows.deletions;
    return place < 0 ? undefined : this.windows.readAt(place, this.scratch);
  }

  /** Where `b`'s window was read, while that place is still good; -1 otherwise. */
  private placeRead(b: BudgetCharge): number {
    const deletions = this.windows.deletions;
    if (b === this.read0 && deletions === this.deletions0) return this.place0;
    if (b === this.read1 && deletions === this.deletions1) return this.place1;
    return -1;
  }

  /** Writes `b`'s window; the other one kept beside it stays as it is. */
  private writeWindowOf(b: BudgetCharge, start: number, count: number, expiresAt: number): void {
    const place = this.placeRead(b);
    // the common write: the window read, its end unmoved; no key parts, no budget id looked up
    if (place >= 0 && !this.windows.writeAt(place, start, count, expiresAt)) return;
    this.placed(b, place, start, count, expiresAt, false, 0, 0, 0);
  }

  /** Writes `b`'s window and the other one kept beside it. */
  private writePairOf(b: BudgetCharge, start: number, count: number, expiresAt: number, otherStart: number, otherCount: number, otherEnd: number): void {
    const place = this.placeRead(b);
    if (place >= 0 && !this.windows.writePairAt(place, start, count, expiresAt, otherStart, otherCount, otherEnd)) return;
    this.placed(b, place, start, count, expiresAt, true, otherStart, otherCount, otherEnd);
  }

  /** A window written where it was not read (`place` -1), or whose end moved: the wheel needs the time it and the other one end by. */
  private placed(b: BudgetCharge, place: number, start: number, count: number, expiresAt: number, pair: boolean, otherStart: number, otherCount: number, otherEnd: number): void {
    const { subject, budget } = hasParts(b) ? b : partsOfKey(b.key);
    const id = this.windows.idOf(budget);
    if (place < 0 && !this.windows.set(subject, id, start, count, expiresAt, pair, otherStart, otherCount, otherEnd)) return;
    this.schedule(WINDOW + id, subject, this.windows.expiresAt(subject, id)!);
  }

  /** The charge algorithm's view of these Maps; private, so the store's public surface is `PolicyStore`. */
  private readonly tx: CounterTx = {
    window: (b) => this.readWindowOf(b),
    setWindow: (b, start, count, expiresAt) => this.writeWindowOf(b, start, count, expiresAt),
    setWindowPair: (b, start, count, expiresAt, otherStart, otherCount, otherEnd) => this.writePairOf(b, start, count, expiresAt, otherStart, otherCount, otherEnd),
    capCount: (cap) => this.capDays.get(`${cap.key}\u0000${cap.day}`)?.members.size ?? 0,
    addCapMember: (cap, member) => {
      const dayKey = `${cap.key}\u0000${cap.day}`;
      const entry = this.capDays.get(dayKey);
      if (entry !== undefined) entry.members.add(member);
      else {
        this.capDays.set(dayKey, { resetAt: cap.resetAt, members: new Set([member]) });
        this.schedule(CAP_DAY, dayKey, cap.resetAt + CAP_KEEP_MS);
      }
    },
    removeCapMember: (key, day, member) => this.capDays.get(`${key}\u0000${day}`)?.members.delete(member) ?? false,
    keyRecord: (key) => this.keys.get(key),
    setKeyRecord: (key, record) => {
      const previous = this.keys.get(key);
      this.keys.set(key, record);
      if (previous === undefined || previous.expiresAt !== record.expiresAt) this.schedule(KEY_RECORD, key, record.expiresAt);
    },
    nextMember: () => `m${this.tag}.${++this.members}`,
  };
}
