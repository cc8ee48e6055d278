/**
 * Stage two, charge: the store contract. One call to `charge` carries every budget and the cap of a
 * request, so that a remote store can check and charge them all or none in one atomic step and one
 * round trip (a Lua script on Redis).
 */
import type { CapName, ReleaseTicket } from "./types.js";

/** One budget to check and charge. */
export interface BudgetCharge {
  /** Store key, scoped to the credential. */
  readonly key: string;
  readonly limit: number;
  readonly windowMs: number;
  /**
   * Whose budget and which, the two parts `key` is spelled from (`createPolicy` always sets both),
   * for a store that keeps a subject's windows together (`MemoryStore` does). A charge built by
   * hand may leave them out; when given, `key` must be the key they spell.
   */
  readonly subject?: string;
  readonly budget?: string;
}

/** The daily cap a request counts toward. */
export interface CapCharge {
  readonly name: CapName;
  /** Store key of the cap (per newsletter for dispatches, per credential for test sends), without the day. */
  readonly key: string;
  /** Day index: whole days since the epoch at the configured day start. */
  readonly day: number;
  readonly limit: number;
  /** When the day ends (ms): the cap's reset, and when its members may be forgotten. */
  readonly resetAt: number;
  /** The UTC offset (ms) of the time zone whose midnight starts the day (1 h: the day starts 23:00 UTC), for a store that reads its own clock. */
  readonly offsetMs: number;
}

/**
 * Everything one request may charge, handed to the store in one call. Plain data: its enumerable
 * fields are JSON (`late`, a function, is not enumerable, so that a copy by structuredClone,
 * postMessage, JSON or a spread carries the rest without it).
 */
export interface ChargeRequest {
  /** The request id (`req_…`), for a store's logs and traces. No store decides by it: idempotency is `idempotency.key`. */
  readonly id: string;
  /** The host's clock (ms). A store may use its own clock instead and report it as `ChargeOutcome.now`. */
  readonly now: number;
  /** Every budget of the request, in policy order. All are charged, or none (spec §8, DESIGN §2). */
  readonly budgets: readonly BudgetCharge[];
  /** The plan already refused the request: charge the budgets when they have room, nothing else. */
  readonly refused: boolean;
  /** The write's Idempotency-Key, scoped to the credential (DESIGN §7). */
  readonly idempotency?: {
    readonly key: string;
    readonly fingerprint: string;
    readonly ttlMs: number;
    /** The credential's scope: `key` is `<scope>:<…>`; a store that cannot list keys by prefix indexes records by it, for `reset`. */
    readonly scope?: string;
  };
  readonly cap?: CapCharge;
  /**
   * Set by `createPolicy` on a charge with a daily cap, and on one with an idempotency key when the
   * store can {@link PolicyStore.forget} a record: a store that gave up on this charge (it threw,
   * and the policy answered without it) but learns that it was made after all (a reply read too
   * late) calls it once with the outcome, and the policy undoes what it counted unless it let the
   * request through (`failOpen`, `insurance`): it releases the cap place, or forgets the key's
   * record. A store that cannot tell never calls it; one that answered the charge never does. Not
   * enumerable: a copy of the request leaves it out.
   */
  readonly late?: (outcome: ChargeOutcome) => void;
}

/** A budget's counter as the charge left it (or found it, when nothing was charged). */
export interface WindowReading {
  /** Requests counted in the current window; 0 when no window is open. */
  readonly count: number;
  /** When the current window ends (ms); 0 when no window is open. */
  readonly resetAt: number;
}

/** Common to every outcome: the time the store decided at, when it used its own clock. */
interface OutcomeBase {
  readonly windows: readonly WindowReading[];
  /** Set by a store that reads its own clock (e.g. Redis TIME); render then measures from it. */
  readonly now?: number;
}

/** What the store did. `windows` lines up with `ChargeRequest.budgets`. */
export type ChargeOutcome = OutcomeBase &
  (
  | { readonly kind: "budget_spent" }
  | {
      readonly kind: "charged";
      /** A retry whose key was already recorded (and, with a cap, already counted). */
      readonly replay: boolean;
      /** The cap charge made, when one was: `member` identifies it for release. */
      readonly member?: string;
    }
  | { readonly kind: "conflict"; readonly fingerprint: string }
  | { readonly kind: "cap_reached"; readonly count: number }
  );

/**
 * A store's answer that cannot be rendered ({@link checkedOutcome}, {@link checkedReadings}): a
 * store failure like any other (DESIGN §12).
 */
export class StoreReplyError extends Error {
  override readonly name = "StoreReplyError";
}

/** Whether `value` has what `createPolicy` calls of a store (its `store` and `insurance.store` options). */
export function isPolicyStore(value: unknown): value is PolicyStore {
  const s = value as Partial<PolicyStore> | null;
  return typeof s === "object" && s !== null && typeof s.charge === "function" && typeof s.release === "function" && typeof s.read === "function";
}

/** A reading that can be rendered: whole, finite numbers, no count below zero. */
function readable(w: WindowReading | undefined): boolean {
  return typeof w === "object" && w !== null && Number.isFinite(w.count) && w.count >= 0 && Number.isFinite(w.resetAt);
}

/** What is wrong with a store's readings of `count` budgets (`read`), or undefined when they can be rendered. */
function readingsProblem(count: number, readings: readonly WindowReading[]): string | undefined {
  if (!Array.isArray(readings) || readings.length !== count) return `the store answered ${Array.isArray(readings) ? readings.length : "no"} windows for ${count} budgets`;
  for (const w of readings) if (!readable(w)) return "the store answered a window that is not a count and a reset time";
  return undefined;
}

/**
 * What is wrong with a store's answer to `request`, or undefined when it can be rendered: a known
 * kind, with its own fields, and one readable window per budget. A store that answers otherwise (a
 * Redis reply that does not add up, a host's store with a bug) has failed: the policy answers as
 * for any store failure (503, or fail-open), never with `NaN` in a header or a TypeError.
 */
function outcomeProblem(request: ChargeRequest, outcome: ChargeOutcome): string | undefined {
  if (typeof outcome !== "object" || outcome === null) return "the store answered no outcome";
  const windows = readingsProblem(request.budgets.length, outcome.windows);
  if (windows !== undefined) return windows;
  switch (outcome.kind) {
    case "budget_spent":
      return undefined;
    case "charged":
      return typeof outcome.replay === "boolean" && (outcome.member === undefined || typeof outcome.member === "string") ? undefined : "the store answered a charge without its replay flag";
    case "conflict":
      return typeof outcome.fingerprint === "string" ? undefined : "the store answered a conflict without a fingerprint";
    case "cap_reached":
      return Number.isFinite(outcome.count) ? undefined : "the store answered a cap without its count";
    default:
      return `the store answered an outcome of unknown kind ${String((outcome as { kind?: unknown }).kind).slice(0, 32)}`;
  }
}

/** `outcome` when it can be rendered for `request`; else throws {@link StoreReplyError} (see `outcomeProblem`). */
export function checkedOutcome(request: ChargeRequest, outcome: ChargeOutcome): ChargeOutcome {
  const problem = outcomeProblem(request, outcome);
  if (problem !== undefined) throw new StoreReplyError(problem);
  return outcome;
}

/** `readings` when there is one readable window per budget; else throws {@link StoreReplyError}. */
export function checkedReadings(count: number, readings: readonly WindowReading[]): readonly WindowReading[] {
  const problem = readingsProblem(count, readings);
  if (problem !== undefined) throw new StoreReplyError(problem);
  return readings;
}

/**
 * Where counters live. Implementations must make `charge` atomic: every budget and the cap of one
 * request are checked and charged together, or nothing is charged, even with many processes.
 * `describeStoreConformance` in `newsletter-policy/testing` checks an implementation against
 * `MemoryStore`. A store that answers later must settle within a deadline of its own (`RedisStore`:
 * `timeoutMs`): the policy waits as long as its store takes, and an insurance store or `failOpen`
 * decides only once the main store has failed.
 */
export interface PolicyStore {
  /** Checks and charges one request, all or nothing. */
  charge(request: ChargeRequest): ChargeOutcome | Promise<ChargeOutcome>;
  /** Uncounts one cap charge; true when it was still counted. Releasing twice uncounts once. */
  release(ticket: ReleaseTicket, now: number): boolean | Promise<boolean>;
  /** Reads budgets without charging, for `GET /rate-limit`. */
  read(budgets: readonly BudgetCharge[], now: number): readonly WindowReading[] | Promise<readonly WindowReading[]>;
  /**
   * Clears exactly what the request names: budget windows, one day's count of daily caps, and the
   * idempotency records of one scope; nothing else. Optional, so that stores written before resets
   * existed still compile; `policy.reset` throws PolicyConfigError over a store without it.
   */
  reset?(request: ResetRequest, now: number): void | Promise<void>;
  /**
   * Forgets an idempotency record, but only the one a charge wrote: same fingerprint, the same end
   * (within a millisecond) and no cap charge in it; true when it did. `createPolicy` calls it for a
   * keyed charge without a cap that the store made after it gave up on it (`ChargeRequest.late`),
   * so that the retry runs instead of being answered as a replay of a write that was never made.
   * Optional: without it such a record stays until it expires.
   */
  forget?(record: RecordTicket, now: number): boolean | Promise<boolean>;
}

/** What {@link PolicyStore.forget} forgets: a store's idempotency record, as one charge wrote it. */
export interface RecordTicket {
  /** The record's store key (`ChargeRequest.idempotency.key`). */
  readonly key: string;
  /** `ChargeRequest.idempotency.fingerprint`. */
  readonly fingerprint: string;
  /** When the record ends: the charge's time (the store's own, `ChargeOutcome.now`, when it reports one) + `ttlMs`. */
  readonly expiresAt: number;
  /** `ChargeRequest.idempotency.scope`, for a store that indexes records by it. */
  readonly scope?: string;
}

/** An idempotency record (DESIGN §7). */
export interface KeyRecord {
  readonly fingerprint: string;
  readonly expiresAt: number;
  /** The cap charge this key made, until it is released. */
  readonly counted?: { readonly day: number; readonly member: string };
}

/** An open budget window. */
export interface WindowRecord {
  readonly start: number;
  readonly count: number;
  /**
   * start + the window's size when it was last charged: the window ends then, whatever size it is
   * read with (a plan that grows it after it ended does not reopen it, one that shrinks it does not
   * end it early); charged while open it takes the larger size (charge.ts `readOpen`).
   */
  readonly expiresAt?: number;
  /**
   * The other window kept beside this one (none, or a count of 0: there is none): the one this
   * replaced, or one ahead of it. A request this one does not hold, stamped
   * inside the other, counts there (charge.ts `readOpen`): a request stamped ahead never wipes a
   * spent window, and a clock stepped back does not take the count of one ahead away from it.
   */
  readonly other?: OtherWindow;
}

/** The other window kept beside a budget's window: its start, count and end. */
export interface OtherWindow {
  readonly start: number;
  readonly count: number;
  readonly expiresAt: number;
}

/**
 * The counters one charge reads and writes, as a transaction. `MemoryStore` implements it over
 * Maps and `evaluate` over an immer snapshot; both run the one algorithm in `charge.ts`.
 */
export interface CounterTx {
  window(budget: BudgetCharge): WindowRecord | undefined;
  /**
   * Writes a budget's window: its start, count and end; the other window kept beside it stays as it
   * is. `runCharge` always gives the end (the window's size is its to decide). Numbers, not a
   * record: MemoryStore keeps them as numbers.
   */
  setWindow(budget: BudgetCharge, start: number, count: number, expiresAt: number): void;
  /** Writes a budget's window and the other window kept beside it (an `otherCount` of 0: none). */
  setWindowPair(budget: BudgetCharge, start: number, count: number, expiresAt: number, otherStart: number, otherCount: number, otherEnd: number): void;
  capCount(cap: CapCharge): number;
  addCapMember(cap: CapCharge, member: string): void;
  /** Removes a member; true when it was there. */
  removeCapMember(key: string, day: number, member: string): boolean;
  keyRecord(key: string): KeyRecord | undefined;
  setKeyRecord(key: string, record: KeyRecord): void;
  /** A member id no other cap charge of this store has. */
  nextMember(): string;
}

/**
 * A day of a daily cap is kept this long after it ends (every store and the pure snapshot): it no
 * longer counts today's requests, but a clock stepped back across midnight still lands on it, and
 * must find its count (a snapshot that forgot a day once two changes were past its end let 50
 * dispatches through a cap of 25 after a −2 s step; found by a clock drill), and a late release of
 * one of its tickets still answers as the Redis store does.
 */
export const CAP_KEEP_MS = 7 * 24 * 60 * 60 * 1000;

/** How long an Idempotency-Key lives (DESIGN §7). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * A daily cap's count to clear: the cap key (without the day) and the day.
 *
 * @example
 * const cap: ResetCap = { key: "d:4.nl_1", day: 20_414, offsetMs: 0 };
 */
export interface ResetCap {
  readonly key: string;
  /** Day index by the host's clock (see `CapCharge.day`). */
  readonly day: number;
  /** The UTC offset (ms) of the time zone whose midnight starts the day (1 h: the day starts 23:00 UTC), for a store that reads its own clock. */
  readonly offsetMs: number;
}

/**
 * Exactly what a store clears for one reset; plain JSON data, built by the policy. A store clears
 * these and nothing else.
 *
 * @example
 * // what policy.reset({ newsletter: "nl_1" }) asks of the store
 * const request: ResetRequest = { windows: [], caps: [{ key: "d:4.nl_1", day: 20_414, offsetMs: 0 }] };
 */
export interface ResetRequest {
  /** Budget window keys to clear (their counts start again at the next charge). */
  readonly windows: readonly string[];
  /** Daily caps whose count for `day` is cleared (every member of that day). */
  readonly caps: readonly ResetCap[];
  /**
   * Clear every idempotency record whose key starts with this scope followed by `:` (the
   * credential's records, see `ChargeRequest.idempotency.scope`).
   */
  readonly idempotencyScope?: string;
}
