/**
 * The embedded default store: counters in Maps of this process. A charge runs synchronously, so it
 * is atomic within the process. Expired windows, past days' caps and idempotency records are
 * forgotten, so memory stays bounded as credentials come and go.
 */
import { readWindow, runCharge, runRelease } from "./charge.js";
import type { ResetRequest } from "./reset.js";
import type { BudgetCharge, ChargeOutcome, ChargeRequest, CounterTx, KeyRecord, PolicyStore, WindowReading, WindowRecord } from "./store.js";
import type { ReleaseTicket } from "./types.js";

interface Expiring {
  /** When the entry may be forgotten (ms). */
  expiresAt: number;
}

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** Sweep expired entries after this many charges. Default 10 000. */
  sweepEvery?: number;
}

/**
 * Counters for one server process. Use `RedisStore` (`newsletter-policy/redis`) to share budgets
 * between processes.
 *
 * @example
 * const policy = createPolicy({ store: new MemoryStore(), clock: () => Date.now() });
 */
export class MemoryStore implements PolicyStore {
  private readonly windows = new Map<string, WindowRecord & Expiring>();
  private readonly caps = new Map<string, { day: number; members: Set<string> } & Expiring>();
  private readonly keys = new Map<string, KeyRecord>();
  private members = 0;
  private charges = 0;
  private readonly sweepEvery: number;

  /** @param options - `sweepEvery` (default 10 000 charges). */
  constructor(options: MemoryStoreOptions = {}) {
    this.sweepEvery = options.sweepEvery ?? 10_000;
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
    if (++this.charges >= this.sweepEvery) this.sweep(request.now);
    return runCharge(this.tx, request);
  }

  /**
   * Uncounts one cap charge and lets its idempotency key count again; idempotent.
   *
   * @param ticket - `decision.release` of an allowed send, schedule or test send.
   * @param now - ms since the epoch (an expired idempotency record is left alone).
   * @returns true when the charge was still counted.
   * @example
   * if (decision.release) store.release(decision.release, Date.now());
   */
  release(ticket: ReleaseTicket, now: number): boolean {
    return runRelease(this.tx, ticket, now);
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
    return budgets.map((b) => readWindow(this.tx, b.key, b.windowMs, now));
  }

  /**
   * Clears exactly what the request names (`policy.reset` builds it): budget windows, one day's
   * count of daily caps, and every idempotency record under one scope. Idempotency records are
   * found by walking this store's keys: O(records held), fine for an operator's action.
   *
   * @param request - what to clear.
   * @example
   * await policy.reset({ credential }); // calls store.reset(...) with the credential's keys
   */
  reset(request: ResetRequest): void {
    for (const key of request.windows) this.windows.delete(key);
    for (const cap of request.caps) if (this.caps.get(cap.key)?.day === cap.day) this.caps.delete(cap.key);
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
    return this.windows.size + this.caps.size + this.keys.size;
  }

  /**
   * Forgets every entry that has expired by `now`. Runs by itself every `sweepEvery` charges.
   *
   * @param now - ms since the epoch.
   * @example
   * setInterval(() => store.sweep(Date.now()), 60_000).unref(); // for a quiet process
   */
  sweep(now: number): void {
    this.charges = 0;
    for (const [key, entry] of this.windows) if (now >= entry.expiresAt) this.windows.delete(key);
    for (const [key, entry] of this.caps) if (now >= entry.expiresAt) this.caps.delete(key);
    for (const [key, entry] of this.keys) if (now >= entry.expiresAt) this.keys.delete(key);
  }

  /** The charge algorithm's view of these Maps; private, so the store's public surface is `PolicyStore`. */
  private readonly tx: CounterTx = {
    window: (key) => this.windows.get(key),
    setWindow: (key, record, windowMs) => {
      this.windows.set(key, { start: record.start, count: record.count, expiresAt: record.start + windowMs });
    },
    capCount: (cap) => {
      const entry = this.caps.get(cap.key);
      return entry !== undefined && entry.day === cap.day ? entry.members.size : 0;
    },
    addCapMember: (cap, member) => {
      const entry = this.caps.get(cap.key);
      if (entry !== undefined && entry.day === cap.day) entry.members.add(member);
      else this.caps.set(cap.key, { day: cap.day, members: new Set([member]), expiresAt: cap.resetAt });
    },
    removeCapMember: (key, day, member) => {
      const entry = this.caps.get(key);
      return entry !== undefined && entry.day === day && entry.members.delete(member);
    },
    keyRecord: (key) => this.keys.get(key),
    setKeyRecord: (key, record) => {
      this.keys.set(key, record);
    },
    nextMember: () => `m${++this.members}`,
  };
}
