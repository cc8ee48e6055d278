/**
 * The charge algorithm, once, over a {@link CounterTx}: the three checks of decide.ts's order that
 * need counters, budgets → idempotency → daily cap (DESIGN §1), all or nothing. It stops after the
 * budgets when the plan already refused (`request.refused`): decide.ts answers with the plan's
 * refusal then. The Redis store's Lua script mirrors it and is held to it by differential tests.
 */
import type { BudgetCharge, ChargeOutcome, ChargeRequest, CounterTx, WindowReading, WindowRecord } from "./store.js";
import { checkedOther } from "./snapshot-check.js";
import type { ReleaseTicket } from "./types.js";

const NO_WINDOW: WindowReading = { count: 0, resetAt: 0 };

/**
 * What {@link runCharge} read of each budget's window, by budget, as numbers in place (a reading
 * object is made only for the outcome): its count, when it resets, its kept start and the size it
 * is charged with next. Grown when a request has more budgets.
 */
let COUNTS = new Float64Array(8);
let RESETS = new Float64Array(8);
let STARTS = new Float64Array(8);
let SIZES = new Float64Array(8);
/**
 * Whether the charge writes the other window kept beside each budget's too (`PAIRS[i]` 1; else it
 * stays as it is), and then its start, count and end (a count of 0: none); and, when the request
 * counts in that other window (`IN_OTHER[i]` 1), the current window's numbers, written back as they
 * were.
 */
let PAIRS = new Uint8Array(8);
let OTHER_STARTS = new Float64Array(8);
let OTHER_COUNTS = new Float64Array(8);
let OTHER_ENDS = new Float64Array(8);
let IN_OTHER = new Uint8Array(8);
let CURRENT_STARTS = new Float64Array(8);
let CURRENT_COUNTS = new Float64Array(8);
let CURRENT_ENDS = new Float64Array(8);

/**
 * Reads a budget's open window, or none when it has ended (fixed windows, DESIGN §4). A window
 * stamped after `now` was opened by a clock ahead of this one:
 *
 * - by less than a window (another host's clock, or this one before a small step back): it keeps
 *   its start. A host behind that moved the start back to its own `now` made the window end that
 *   much sooner for the hosts ahead, and hosts a window apart then admitted without end (found by a
 *   multi-process drill: 300 of 300 reads on a budget of 60);
 * - by more than a window (a clock stepped back an hour, a request stamped days ahead): it is read
 *   as starting now, keeping its count, and the next charge stores that start, so that a window with
 *   room left is open for one more window at most. A spent one is not re-stored (a budget 429
 *   charges nothing) and stays refused until its stored start plus one window. RedisStore, which
 *   hosts share, never re-bases (scripts/prelude.ts OPEN_WINDOW).
 *
 * Two windows are kept: the current one, and the other one beside it. When a request opens a window,
 * the one it replaces stays as the other, unless the other is ahead of the request (then that one
 * stays: a clock ahead counts there). A request that the current window does not hold, stamped in
 * the other (up to a window before its start, as above), counts there by its own start and end.
 * Without it one request stamped a day ahead replaced a spent window, and back at the right time
 * the window read afresh: 5 reads in a minute on a budget of 3; a clock flapping between now and a
 * day ahead let 50 reads of 50 through (found by a clock drill). With it, two clocks each fill their
 * own window, as on RedisStore. Under a clock that never steps back no request lands in the other
 * window, so it changes no answer there.
 *
 * Its reset is read as at most one window away either way (what RateLimit-Reset and Retry-After
 * say): by the clock of the host reading it, the window it keeps may end up to that much later.
 */
export function readWindow(tx: Pick<CounterTx, "window">, budget: BudgetCharge, now: number): WindowReading {
  return readOpen(tx, budget, now, 0) ? { count: COUNTS[0]!, resetAt: RESETS[0]! } : NO_WINDOW;
}

function grow(n: number): void {
  COUNTS = new Float64Array(n);
  RESETS = new Float64Array(n);
  STARTS = new Float64Array(n);
  SIZES = new Float64Array(n);
  PAIRS = new Uint8Array(n);
  OTHER_STARTS = new Float64Array(n);
  OTHER_COUNTS = new Float64Array(n);
  OTHER_ENDS = new Float64Array(n);
  IN_OTHER = new Uint8Array(n);
  CURRENT_STARTS = new Float64Array(n);
  CURRENT_COUNTS = new Float64Array(n);
  CURRENT_ENDS = new Float64Array(n);
}

/**
 * {@link readWindow} into the numbers at `i`: true when a window is open, its count, reset, kept
 * start and next size then at `COUNTS[i]`, `RESETS[i]`, `STARTS[i]` and `SIZES[i]`.
 *
 * A window ends at start + the size it was last charged with (`expiresAt`), whatever size it is read
 * with: a plan that grew the window after it ended does not reopen it, and one that shrinks it does
 * not end it early. Charged while open, it takes the larger of the two sizes. (It ended at the
 * earlier of the two, so a credential whose requests carried two plans in turn, an hour's audience
 * window and a second's, had the hour's window ended every second and its count started again: 594
 * reads admitted in 10 s where the hour's plan allowed 100; found by a config review.)
 */
function readOpen(tx: Pick<CounterTx, "window">, budget: BudgetCharge, now: number, i: number): boolean {
  const record = tx.window(budget);
  PAIRS[i] = 0;
  if (record === undefined) return false;
  const windowMs = budget.windowMs;
  const opened = record.start;
  // its end by the size it was last charged with (a window kept before ends were: the size read with)
  const end = record.expiresAt ?? opened + windowMs;
  // held by this window (up to a window before its start, see above), unless stamped before its
  // start and inside the other window's own span: then it counts there (two windows a window apart,
  // a request at the end of the earlier one read as a small step back into the later one let a
  // spent window's clock count one more; found by a deep run of the two-clock property)
  if (now < end && opened <= now + windowMs && (opened <= now || !inOther(record, now))) {
    STARTS[i] = opened;
    // the size it ends by now, and the size it is charged with next (the larger)
    const current = end - opened;
    SIZES[i] = current > windowMs ? current : windowMs;
    COUNTS[i] = record.count;
    // when it ends unless charged: a charge grows it to `size`, a refusal or a read does not (a 429
    // under a plan with a longer window said Retry-After 3590 of a window that ended 50 s later, and
    // the request was allowed then; found by an operating review)
    RESETS[i] = (opened > now ? now : opened) + current;
    return true;
  }
  return readBeside(record, budget, now, i, opened, end);
}

/** Whether `now` is inside the span of the other window kept beside `record` (from its start to its end). */
function inOther(record: WindowRecord, now: number): boolean {
  const other = record.other;
  return other !== undefined && other !== null && other.count > 0 && other.start <= now && now < other.expiresAt;
}

/**
 * {@link readOpen} for a request the current window does not hold: it counts in the other window
 * kept beside it when that one holds it, else a window opens at `now`. Its own function: nearly
 * every charge is in an open window, and this stays out of that path.
 */
function readBeside(record: WindowRecord, budget: BudgetCharge, now: number, i: number, opened: number, end: number): boolean {
  const windowMs = budget.windowMs;
  PAIRS[i] = 1;
  IN_OTHER[i] = 0;
  const kept = checkedOther(record.other, budget.key);
  const other = kept === undefined ? 0 : kept.count;
  const otherStart = other > 0 ? kept!.start : 0;
  const otherEnd = other > 0 ? kept!.expiresAt : 0;
  if (other > 0 && now < otherEnd && otherStart <= now + windowMs) {
    // the other window holds `now` (a clock on the other side of a step): the request counts there,
    // by its start and end as they are, and the current window is written back as it was
    IN_OTHER[i] = 1;
    CURRENT_STARTS[i] = opened;
    CURRENT_COUNTS[i] = record.count;
    CURRENT_ENDS[i] = end;
    OTHER_ENDS[i] = otherEnd;
    STARTS[i] = otherStart;
    SIZES[i] = otherEnd - otherStart;
    COUNTS[i] = other;
    RESETS[i] = (otherStart > now ? now : otherStart) + (otherEnd - otherStart);
    return true;
  }
  // a window opens at `now`; the one kept beside it is the other one while it is ahead of `now` (its
  // clock counts there), else this one
  const otherAhead = other > 0 && now < otherEnd;
  if (!(now < end)) {
    // this one ended
    OTHER_STARTS[i] = otherAhead ? otherStart : opened;
    OTHER_COUNTS[i] = otherAhead ? other : record.count;
    OTHER_ENDS[i] = otherAhead ? otherEnd : end;
    return false;
  }
  // this one is more than a window ahead (see above): re-based, the new window counts from what the
  // windows ahead of `now` counted, and this one is kept beside it (the other one, ahead too, is
  // dropped: its count is carried)
  OTHER_STARTS[i] = opened;
  OTHER_COUNTS[i] = record.count;
  OTHER_ENDS[i] = end;
  STARTS[i] = now;
  SIZES[i] = windowMs;
  COUNTS[i] = otherAhead && other > record.count ? other : record.count;
  RESETS[i] = now + windowMs;
  return true;
}

/** Checks and charges one request inside a transaction. */
export function runCharge(tx: CounterTx, request: ChargeRequest): ChargeOutcome {
  const { now, budgets } = request;
  const n = budgets.length;
  if (STARTS.length < n) grow(n);
  let spent = false;
  for (let i = 0; i < n; i++) {
    const b = budgets[i]!;
    if (!readOpen(tx, b, now, i)) COUNTS[i] = RESETS[i] = 0;
    if (COUNTS[i]! >= b.limit) spent = true;
  }
  // one list, sized once: the windows as read (a refusal), or as charged
  const windows = new Array<WindowReading>(n);
  // DESIGN §2: a request refused because a budget is spent charges nothing
  if (spent) {
    for (let i = 0; i < n; i++) windows[i] = { count: COUNTS[i]!, resetAt: RESETS[i]! };
    return { kind: "budget_spent", windows };
  }

  const charged = windows;
  for (let i = 0; i < n; i++) {
    const budget = budgets[i]!;
    const count = COUNTS[i]!;
    // a window starts at its first charge, and keeps the start readOpen read (see there)
    const opened = count === 0;
    const start = opened ? now : STARTS[i]!;
    const size = opened ? budget.windowMs : SIZES[i]!;
    if (PAIRS[i] === 0) tx.setWindow(budget, start, count + 1, start + size);
    else if (IN_OTHER[i] === 1) {
      // counted in the other window, which keeps its start and end; the current one is unchanged
      tx.setWindowPair(budget, CURRENT_STARTS[i]!, CURRENT_COUNTS[i]!, CURRENT_ENDS[i]!, start, count + 1, OTHER_ENDS[i]!);
      charged[i] = { count: count + 1, resetAt: RESETS[i]! };
      continue;
    } else tx.setWindowPair(budget, start, count + 1, start + size, OTHER_STARTS[i]!, OTHER_COUNTS[i]!, OTHER_ENDS[i]!);
    charged[i] = { count: count + 1, resetAt: (start > now ? now : start) + size };
  }
  if (request.refused) return { kind: "charged", windows: charged, replay: false };

  const idem = request.idempotency;
  const record = idem === undefined ? undefined : tx.keyRecord(idem.key);
  const live = record !== undefined && now < record.expiresAt ? record : undefined;
  if (idem !== undefined && live !== undefined && live.fingerprint !== idem.fingerprint) {
    return { kind: "conflict", windows: charged, fingerprint: live.fingerprint };
  }

  const cap = request.cap;
  if (cap !== undefined) {
    // DESIGN §7: a key that already counted counts nothing more and is not refused by the cap
    if (live?.counted !== undefined) return { kind: "charged", windows: charged, replay: true };
    const count = tx.capCount(cap);
    if (count >= cap.limit) return { kind: "cap_reached", windows: charged, count };
    const member = tx.nextMember();
    tx.addCapMember(cap, member);
    // the key is recorded afresh: an allowed write that counted, live 24 h from now (DESIGN §7). A
    // released key's retry that runs again would otherwise be forgotten 24 h after its first use, and
    // a retry of this use after that be sent a second time instead of replayed.
    if (idem !== undefined) tx.setKeyRecord(idem.key, { fingerprint: idem.fingerprint, expiresAt: now + idem.ttlMs, counted: { day: cap.day, member } });
    // counted now, so not a replay, even with a live key: its earlier charge was released (the send
    // failed downstream), and this retry must run again (DESIGN §7)
    return { kind: "charged", windows: charged, replay: false, member };
  }

  if (idem !== undefined && live === undefined) {
    tx.setKeyRecord(idem.key, { fingerprint: idem.fingerprint, expiresAt: now + idem.ttlMs });
  }
  return { kind: "charged", windows: charged, replay: live !== undefined };
}

/**
 * Uncounts one cap charge and lets its key count again (DESIGN §7). True when it was counted. The
 * member leaves the set of the day it was counted on, whatever day the cap counts now: a send
 * that failed at 23:59:59 and is released after midnight frees its key, so its retry runs (and
 * counts today) instead of being answered as a replay; yesterday's set, which no longer decides
 * anything, loses the member. (A rule that a ticket of a day before the cap's latest charge
 * uncounted nothing let a host whose clock was behind, charging after midnight, undo the release of
 * a host ahead: the ahead host's failed send stayed counted; found by a Redis drill.)
 */
export function runRelease(tx: CounterTx, ticket: ReleaseTicket): boolean {
  const removed = tx.removeCapMember(ticket.key, ticket.day, ticket.member);
  if (ticket.idempotencyKey !== undefined) {
    const record = tx.keyRecord(ticket.idempotencyKey);
    // its own charge, live or not: a record the release found expired (at its very end) was left
    // counted, and a clock stepped back made it live again, answering the failed send's retry as a
    // replay (found by a black-box review); an expired record has nothing else to keep
    if (record !== undefined && record.counted?.member === ticket.member) {
      tx.setKeyRecord(ticket.idempotencyKey, { fingerprint: record.fingerprint, expiresAt: record.expiresAt });
    }
  }
  return removed;
}
