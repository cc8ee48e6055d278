/**
 * Several charges in one round trip (`CHARGE_BATCH`): the charges a store was handed in one turn of
 * the event loop (the store's batcher, batcher.ts), each run exactly as `CHARGE` runs it — its own
 * KEYS and ARGV, nonce and memo — one after another, in the order they were handed over. Redis runs
 * scripts one at a time, so this is what separate `CHARGE` calls arriving back to back would do,
 * for one command's cost instead of one per charge (a write and a read on each side, the command's
 * own overhead in Redis).
 *
 * The deadline is the batch's: checked once here (a batch past its deadline charges nothing). A charge that fails (an error reply inside it, e.g.
 * a key of the wrong type) answers `{ '!', message }` in its place and the others go on, as separate
 * calls would.
 */
import type { ChargeOutcome } from "../../store.js";
import { CHARGE, CHARGE_TIMED, decodeCharge } from "./charge.js";
import { NUM, REDIS_TIME } from "./prelude.js";
import type { Script, ScriptCall } from "./script.js";

/** `body` as the body of a Lua function: every line indented by two spaces (blank lines stay blank). */
export function indented(body: string): string {
  return body
    .split("\n")
    .map((line) => (line === "" ? line : `  ${line}`))
    .join("\n");
}

/**
 * KEYS: every charge's KEYS, one charge after another.
 * ARGV: 1 deadline (Redis ms; '' = none), 2 m (how many charges), then per charge: its
 *   number of KEYS, its number of ARGV, its ARGV (as `chargeCall` built them).
 * Reply: { 'b', Redis time, reply_1, ..., reply_m } (each as `CHARGE` answers, or { '!', message });
 *   { 'e', Redis time } when the batch ran past its deadline and did nothing.
 */
export function batchSource(charge: string): string {
  const deadline = CHARGE_TIMED.deadlineArg + 1;
  return `-- KEYS and ARGV, named (batchCall in scripts/charge-batch.ts builds them)
local deadline, m = ARGV[1], tonumber(ARGV[2])
-- charge j: its KEYS and ARGV, sliced out of the batch's (the deadline was checked here, once)
local next_key, next_arg = 0, 2
local function slice()
  local nk, na = tonumber(ARGV[next_arg + 1]), tonumber(ARGV[next_arg + 2])
  local keys, args = {}, {}
  for i = 1, nk do keys[i] = KEYS[next_key + i] end
  for i = 1, na do args[i] = ARGV[next_arg + 2 + i] end
  args[${deadline}] = ''
  next_key, next_arg = next_key + nk, next_arg + 2 + na
  return keys, args
end

-- one charge, exactly as CHARGE (scripts/charge.ts) runs it, over its own KEYS and ARGV
local function charge_one(KEYS, ARGV)
${indented(charge)}
end

${NUM}${REDIS_TIME}if deadline ~= '' and rt > tonumber(deadline) then return { 'e', num(rt) } end
local res = { 'b', num(rt) }
for j = 1, m do
  local ok, reply = pcall(charge_one, slice())
  if not ok then reply = { '!', type(reply) == 'table' and tostring(reply.err) or tostring(reply) } end
  res[2 + j] = reply
end
return res
`;
}

/** The charges of one batch, run one after another (see {@link batchSource}). */
export const CHARGE_BATCH: Script = {
  source: batchSource(CHARGE.source),
  sha: "c072252b2bf8f767a3f24a1bf2cffd1fa350a468",
};


/** Encodes KEYS and ARGV of `CHARGE_BATCH` from the charges' own calls (`chargeCall`). */
export function batchCall(calls: readonly ScriptCall[]): ScriptCall {
  const keys: string[] = [];
  const args: string[] = ["", String(calls.length)];
  for (const call of calls) {
    for (const key of call.keys) keys.push(key);
    args.push(String(call.keys.length), String(call.args.length));
    for (const arg of call.args) args.push(arg);
  }
  return { keys, args };
}

/**
 * Decodes a batch's reply: per charge, its outcome or the error it answered.
 *
 * @param count - how many charges the batch carried.
 */
export function decodeBatch(reply: unknown, count: number): (ChargeOutcome | Error)[] {
  if (!Array.isArray(reply) || String(reply[0]) !== "b" || reply.length !== 2 + count) {
    throw new Error(`newsletter-policy/redis: unexpected reply to a batch of ${count} charges: ${String(reply)}`);
  }
  const out: (ChargeOutcome | Error)[] = [];
  for (let j = 0; j < count; j++) {
    const part: unknown = reply[2 + j];
    if (Array.isArray(part) && String(part[0]) === "!") out.push(new Error(`newsletter-policy/redis: ${String(part[1])}`));
    else {
      try {
        out.push(decodeCharge(part));
      } catch (error) {
        out.push(error instanceof Error ? error : new Error(String(error)));
      }
    }
  }
  return out;
}
