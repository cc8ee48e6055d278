/**
 * A lone charge with neither an idempotency key nor a cap (a plain charge: a read, most writes):
 * `CHARGE_PLAIN`. For such a charge runCharge stops after its budget steps, so the script is those
 * steps (the text `CHARGE` and `CHARGE_BATCH` run, charge-steps.ts) behind a header of four
 * arguments, instead of `CHARGE`'s sixteen and the closures of the steps a plain charge never takes.
 * Its reply is `CHARGE`'s without the two parts a plain charge leaves empty (the plain layout,
 * charge-steps.ts), decoded by `decodeCharge`; its memo is packed with `struct` (`PLAIN_MEMO`). Redis
 * Cluster sends it too: every key is in the credential's slot.
 */
import type { Timed } from "../client.js";
import { EXPIRY_SLACK_MS } from "../key-layout.js";
import { CHARGE, CHARGE_TIMED, chargeCall, FIRST_ARG_TIMED, type ChargeCallInput } from "./charge.js";
import { budgetStepsFunction, PLAIN_MEMO, REPLAY_PLAIN } from "./charge-steps.js";
import { DECIDING_NOW, NUM, REDIS_TIME } from "./prelude.js";
import { indented, type Script, type ScriptCall } from "./script.js";

/**
 * KEYS: 1 memo hash (this store's, this time slot's), budget_1..budget_n.
 * ARGV: 1 deadline (Redis ms; '' = none), 2 memo hash ttl ms ('0': no retries, no memo), 3 now (the
 *   host's ms; '' = Redis's clock decides: with `clock: "redis"` there is no host time to send), 4 this
 *   call's nonce, then limit_i, window_i. The clock is the now argument's, and the expiry slack a
 *   literal (a constant): every argument is one more string for Redis to build into ARGV on every
 *   call, and a table of nine is rehashed once more than one of eight.
 * Reply: { kind, Redis time (µs), now, count_1, resetAt_1, ... } of kind S or C (the `plain` layout,
 *   charge-steps.ts; decoded by `decodeCharge`); { 'e', Redis time (µs) } when the call ran past its deadline and
 *   did nothing.
 */
export const CHARGE_PLAIN: Script = {
  source: `-- KEYS and ARGV, named (plainChargeCall in scripts/charge-plain.ts builds them)
local deadline, memo_ttl, now_arg, nonce = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local memo_key, n, slack, clock = KEYS[1], #KEYS - 1, ${EXPIRY_SLACK_MS}, now_arg == '' and 'r' or 'h'
-- budget i (1..n): its key, its window as text (as a window records it) and its limit as text
local function budget(i)
  return KEYS[1 + i], ARGV[4 + 2 * i], ARGV[3 + 2 * i]
end
${NUM}${REDIS_TIME}
-- The caller gave up (the store answered it 503): charge nothing for a request that was not admitted.
if deadline ~= '' and rt > deadline + 0 then return { 'e', rt_us } end
-- This call was sent before (the store retried after a timeout): its reply as it was, at this Redis
-- time. With no retries (a memo lifetime of 0) there is no memo to look for. The field '_' says the
-- hash's lifetime is set (see below).
local found = memo_ttl ~= '0' and redis.call('HMGET', memo_key, nonce, '_')
if found and found[1] then
${indented(REPLAY_PLAIN)}
  return replay_plain(found[1])
end
${DECIDING_NOW}${budgetStepsFunction("plain")}
-- runCharge (src/charge.ts), all of it for a request with neither idempotency key nor cap
res = budget_steps(budget, n, now, rt_us, clock, slack, num)
if memo_ttl == '0' then return res end
${PLAIN_MEMO}
if found[2] then
  -- written only below, with the lifetime in the same script: the hash has one (a nonce is a number, never '_')
  redis.call('HSET', memo_key, nonce, memo)
else
  redis.call('HSET', memo_key, nonce, memo, '_', '1')
  redis.call('PEXPIRE', memo_key, memo_ttl, 'NX')
end
return res
`,
  sha: "577b015622aadc462831736fbb6734cdb61615d7",
};

/** KEYS and ARGV of a plain charge as a batch carries it: its memo hash and budgets; now, nonce, limits and windows. */
export function plainCall(input: Pick<ChargeCallInput, "now" | "nonce" | "budgets" | "memo" | "key">): ScriptCall {
  const { budgets, key } = input;
  const keys = [key(input.memo)];
  const args = [String(input.now), input.nonce];
  for (const b of budgets) {
    keys.push(key(b.key));
    args.push(String(b.limit), String(b.windowMs));
  }
  return { keys, args };
}

/** A plain charge: one with neither an idempotency key nor a cap (`CHARGE_PLAIN` alone, the plain path in a batch). */
export function isPlain(input: Pick<ChargeCallInput, "idempotency" | "cap">): boolean {
  return input.idempotency === undefined && input.cap === undefined;
}

/** Encodes KEYS and ARGV of `CHARGE_PLAIN` (see the script for the layout). */
export function plainChargeCall(input: ChargeCallInput): ScriptCall {
  const { keys, args } = plainCall(input);
  if (input.clock === "r") args[0] = "";
  return { keys, args: ["", String(input.memoTtlMs), ...args] };
}

/** One charge sent alone: the script, its KEYS and ARGV, and where its deadline goes. */
export interface LoneCharge {
  readonly script: Script;
  readonly call: ScriptCall;
  readonly timed: Timed;
}

/** A charge sent alone: `CHARGE_PLAIN` when it is plain, else `CHARGE`. Both replies decode with `decodeCharge`. */
export function loneCharge(input: ChargeCallInput): LoneCharge {
  if (isPlain(input)) return { script: CHARGE_PLAIN, call: plainChargeCall(input), timed: FIRST_ARG_TIMED };
  return { script: CHARGE, call: chargeCall(input), timed: CHARGE_TIMED };
}
