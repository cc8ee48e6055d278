/**
 * The charge script of a single primary (`CHARGE`): every budget and the daily cap of one request,
 * checked and charged all or nothing in one round trip. Its order (`chargeSource`) is shared with
 * Redis Cluster's step 1 (cluster-step1.ts), which differs only in how it takes the cap; so are the
 * KEYS/ARGV (`chargeCall`) and the reply (`decodeCharge`).
 *
 * The Lua is `runCharge` (src/charge.ts) over Redis keys: the same order and rules, not the same
 * lines, held to it by the differential tests (Redis store against `MemoryStore`). Expiries are
 * relative (`PEXPIRE` of the time left), never absolute: a host clock that is off from Redis's clock
 * moves no key's lifetime.
 */
import type { BudgetCharge, ChargeOutcome, ChargeRequest } from "../../store.js";
import type { Timed } from "../client.js";
import { CAP_GRACE_MS, EXPIRY_SLACK_MS, indexKey, SEQ_KEY, SEQ_TTL_MS } from "../key-layout.js";
import { BUDGET_STEPS, CHARGE_STEP, MEMO, RECORD_STEPS, REPLY, TODAY } from "./charge-steps.js";
import { DAY_OF, NOW } from "./prelude.js";
import { parts, readings, text, type Part, type Script, type ScriptCall } from "./script.js";

/**
 * KEYS: 1 seq, 2 memo hash (this store's, this time slot's), budget_1..budget_n, [idempotency record],
 *   [cap key without the day: `CHARGE` only], [the credential's index of idempotency records].
 * ARGV: 1 clock (h|r), 2 now, 3 this call's nonce, 4 memo hash ttl ms ('0': no retries, nothing to
 *   remember), 5 n, 6 refused (1|0), 7 fingerprint ('' = no idempotency key), 8 key ttl ms, 9 day,
 *   10 cap limit ('' = no cap), 11 day end ms, 12 day offset ms, 13 and 14 the script's own (`own`),
 *   15 expiry slack ms, 16 deadline (Redis ms; '' = none), then limit_i, window_i, then '1' when the
 *   last KEY is the index.
 */
const header = (own: string) => `-- KEYS and ARGV, named (chargeCall in scripts/charge.ts builds them)
local clock, now_arg, nonce, memo_ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local n, refused, fingerprint, key_ttl = tonumber(ARGV[5]), ARGV[6] == '1', ARGV[7], tonumber(ARGV[8])
local day_arg, cap_limit, day_end, day_offset = ARGV[9], ARGV[10], ARGV[11], ARGV[12]
local slack, deadline = tonumber(ARGV[15]), ARGV[16]
-- budget i (1..n): its key, its window as text (as a window records it) and its limit as text
local function budget(i)
  return KEYS[2 + i], ARGV[16 + 2 * i], ARGV[15 + 2 * i]
end
local seq_key, memo_key = KEYS[1], KEYS[2]
local idem_key = fingerprint ~= '' and KEYS[3 + n] or nil
local index_key = ARGV[17 + 2 * n] == '1' and KEYS[#KEYS] or nil
${own}`;

/**
 * The source of a charge script: KEYS and ARGV named, the shared Lua, then the order (the main chunk),
 * with each piece of the steps defined just before the order first needs it (charge-steps.ts), so
 * that a call returning early builds no closure it does not use; the script's own `take_cap` last.
 *
 * @param own - Lua naming ARGV 13 and 14 (and any KEY of the script's own).
 * @param takeCap - Lua defining `local function take_cap()`, run when the request has a daily cap.
 */
export function chargeSource(own: string, takeCap: string): string {
  return `${header(own)}${NOW}${MEMO}${BUDGET_STEPS}${REPLY}
-- mirrors runCharge (src/charge.ts): the same order and rules (budgets → idempotency → daily cap, all
-- or nothing), held to it by the differential tests; take_cap is the script's own.
-- The caller gave up (the store answered it 503): charge nothing for a request that was not admitted.
if deadline ~= '' and rt > deadline + 0 then return { 'e', rt_us } end
-- This call was sent before (the store retried after a timeout): its reply as it was, at this Redis
-- time. Memos are fields of one hash per store and time slot (memo_key), named by the call's nonce.
local memo = redis.call('HGET', memo_key, nonce)
if memo then return replay(memo) end
${CHARGE_STEP}
-- DESIGN §2: a request refused because a budget is spent charges nothing (remembered, as every reply);
-- one refused by the plan is charged (runCharge), and answered as charged
res, spent = budget_steps(budget, n, now, rt_us, clock, slack, num)
if spent or refused then return remember(res) end
-- neither idempotency key nor cap: charged (what follows is defined only for the calls that need it)
if not idem_key and cap_limit == '' then return remember(res) end
${RECORD_STEPS}${DAY_OF}${TODAY}${takeCap}
if idem_key then
  live = live_record()
  if live and live.f ~= fingerprint then return remember(reply('x', live.f, '')) end
end
if cap_limit ~= '' then return take_cap() end
if idem_key and not live then record(now + key_ttl) end
return remember(reply('c', live and '1' or '0', ''))
`;
}

/** A single primary's cap step: runCharge's, with members from the sequence key. */
const TAKE_CAP = `
-- runCharge's cap step
local function take_cap()
  -- DESIGN §7: a key that already counted counts nothing more and is not refused by the cap
  if live and live.m then return remember(reply('c', '1', '')) end
  local day, reset_at = today()
  local day_text = num(day)
  local set = cap_key .. ':' .. day_text
  local count = redis.call('SCARD', set)
  if count >= tonumber(cap_limit) then return remember(reply('r', num(count), '')) end
  local member
  repeat
    member = 'm' .. num(redis.call('INCR', seq_key))
  until redis.call('SADD', set, member) == 1
  redis.call('PEXPIRE', seq_key, seq_ttl)
  local ttl = math.max(1, math.ceil(reset_at - now)) + cap_grace
  redis.call('PEXPIRE', set, ttl)
  -- counted now: not a replay, even with a live key (its charge was released; the retry runs again),
  -- and the key is recorded afresh, live 24 h from this use
  if idem_key then record(now + key_ttl, day_text, member) end
  return remember(reply('c', '0', member))
end
`;

/**
 * The charge script of a single primary (and of a cluster request whose cap, if any, is in the
 * credential's slot). ARGV 13: cap grace ms, 14: seq ttl ms; the cap key is the KEY after the record.
 * Reply: { kind, Redis time (whole µs, an integer), now ('' with the host clock), a, b, count_1, resetAt_1, ... } where kind is
 *   s (budget_spent), c (charged: a = replay 1|0, b = member), x (conflict: a = fingerprint),
 *   r (cap_reached: a = count); or { 'e', Redis time (µs) } when the call ran past its deadline and did nothing.
 */
export const CHARGE: Script = {
  source: chargeSource(
    `local cap_grace, seq_ttl = tonumber(ARGV[13]), ARGV[14]
local cap_key = KEYS[(idem_key and 4 or 3) + n]
`,
    TAKE_CAP,
  ),
  sha: "8d9f8be1052f6891a9ca2b262c70d07e696534d8",
};

/** The charge scripts' deadline argument (0-based in ARGV) and how their replies carry Redis's time. */
export const CHARGE_TIMED: Timed = {
  deadlineArg: 15,
  // Redis's time in whole µs (rt_us), to ms
  timeOf: (reply) => (Array.isArray(reply) ? Number(reply[1]) / 1000 : undefined),
  expired: (reply) => Array.isArray(reply) && String(reply[0]) === "e",
};

/** As {@link CHARGE_TIMED}, for the scripts whose deadline is their first argument (`CHARGE_BATCH`, `CLUSTER_STEP2`). */
export const FIRST_ARG_TIMED: Timed = { ...CHARGE_TIMED, deadlineArg: 0 };

/** What one call of a charge script is built from. */
export interface ChargeCallInput {
  readonly clock: "h" | "r";
  readonly now: number;
  readonly nonce: string;
  /** How long the memo hash lives (ms); 0 writes no memo (no retries). */
  readonly memoTtlMs: number;
  readonly refused: boolean;
  readonly budgets: readonly BudgetCharge[];
  /** The idempotency key this script reads and writes, if any. */
  readonly idempotency: ChargeRequest["idempotency"];
  /** The daily cap, if any. */
  readonly cap: ChargeRequest["cap"];
  /** Redis Cluster step 1: step 2 takes the cap, and a new cap charge will use this member. */
  readonly step2Member?: string | undefined;
  /** The memo hash's store key. */
  readonly memo: string;
  /** A store key as Redis names it (prefix, and hash tag with a cluster). */
  readonly key: (storeKey: string) => string;
}

/** Encodes KEYS and ARGV of `CHARGE` and `CLUSTER_STEP1` (see `header` above for the layout). */
export function chargeCall(input: ChargeCallInput): ScriptCall {
  const { budgets, idempotency: idem, cap, key, step2Member } = input;
  const keys = [key(SEQ_KEY), key(input.memo), ...budgets.map((b) => key(b.key))];
  if (idem !== undefined) keys.push(key(idem.key));
  if (cap !== undefined && step2Member === undefined) keys.push(key(cap.key));
  const args = [
    input.clock,
    String(input.now),
    input.nonce,
    String(input.memoTtlMs),
    String(budgets.length),
    input.refused ? "1" : "0",
    idem?.fingerprint ?? "",
    String(idem?.ttlMs ?? ""),
    String(cap?.day ?? ""),
    String(cap?.limit ?? ""),
    String(cap?.resetAt ?? ""),
    String(cap?.offsetMs ?? 0),
    step2Member !== undefined && cap !== undefined ? cap.key : String(CAP_GRACE_MS),
    step2Member ?? String(SEQ_TTL_MS),
    String(EXPIRY_SLACK_MS),
    "", // the deadline, set by the link
  ];
  for (const b of budgets) args.push(String(b.limit), String(b.windowMs));
  // the credential's index of idempotency records (the last KEY), so that reset finds them in one round trip
  if (idem?.scope !== undefined) {
    keys.push(key(indexKey(idem.scope)));
    args.push("1");
  }
  return { keys, args };
}

/** The windows of a charge reply (after its first five parts), with `now` when Redis's clock decided. */
export function outcomeBase(now: Part | undefined, flat: readonly Part[]): Pick<ChargeOutcome, "windows" | "now"> {
  return now === "" || now === undefined ? { windows: readings(flat) } : { windows: readings(flat), now: Number(now) };
}

/**
 * How many parts of a charge reply of kind `kind` come before its windows: 3 in the plain layout (S,
 * C: kind, Redis time, now), 5 in the full one (kind, Redis time, now, a, b); see `ReplyLayout`
 * (charge-steps.ts). `outcomeOf` reads the windows from there, `batchStarts` (charge-batch.ts) sizes
 * each reply of a batch by it.
 */
export function windowsFrom(kind: string | undefined): number {
  return kind === "S" || kind === "C" ? 3 : 5;
}

/**
 * `late` (the outcome of a charge Redis made after the store gave up on it) as `Link.run` calls it:
 * with the reply, decoded as {@link decodeCharge} decodes it. Undefined without one.
 */
export function lateCharge(late: ((outcome: ChargeOutcome) => void) | undefined): ((reply: unknown) => void) | undefined {
  return late && ((reply) => late(decodeCharge(reply)));
}

/** Decodes a charge reply of kind s, x, r or c (see `CHARGE`), or S or C (`CHARGE_PLAIN`), into the store's outcome. */
export function decodeCharge(reply: unknown): ChargeOutcome {
  return outcomeOf(parts(reply, "charge"));
}

/**
 * {@link decodeCharge} of a reply already read into parts: { kind, Redis time, now, a, b, windows… },
 * or of kind S and C (a plain charge's) { kind, Redis time, now, windows… }; the one that runs from
 * part `at` to before part `end` (a batch's replies come one after another).
 * Read by index, each outcome built whole (a destructuring with a rest and object spreads were a
 * sixth of the host's time per charge).
 */
export function outcomeOf(reply: readonly Part[], at = 0, end = reply.length): ChargeOutcome {
  const kind = text(reply[at]);
  const now = reply[at + 2];
  const a = text(reply[at + 3]);
  const b = text(reply[at + 4]);
  // a plain charge's reply (S, C) has no a and b: its windows follow now
  const windows = readings(reply, at + windowsFrom(kind), end);
  const redisNow = now === "" || now === undefined ? undefined : Number(now);
  let outcome: ChargeOutcome;
  switch (kind) {
    case "s":
    case "S":
      outcome = { kind: "budget_spent", windows };
      break;
    case "C":
      outcome = { kind: "charged", windows, replay: false };
      break;
    case "x":
      outcome = { kind: "conflict", windows, fingerprint: a! };
      break;
    case "r":
      outcome = { kind: "cap_reached", windows, count: Number(a) };
      break;
    case "c":
      outcome = b ? { kind: "charged", windows, replay: a === "1", member: b } : { kind: "charged", windows, replay: a === "1" };
      break;
    default:
      throw new Error(`newsletter-policy/redis: unexpected reply to charge: ${reply.slice(at, end).join(" ")}`);
  }
  // set only when Redis's clock decided (an absent `now` is left out, not undefined)
  if (redisNow !== undefined) (outcome as { now?: number }).now = redisNow;
  return outcome;
}
