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
import { EXPIRY_SLACK_MS } from "../key-layout.js";
import { CHARGE, CHARGE_TIMED, chargeCall, outcomeOf, windowsFrom, type ChargeCallInput } from "./charge.js";
import { budgetSteps, PLAIN_MEMO, REPLAY_PLAIN, SAVE_MEMOS } from "./charge-steps.js";
import { NUM, REDIS_MS, REDIS_TIME } from "./prelude.js";
import { isPlain, plainCall } from "./charge-plain.js";
import { indented, parts, text, type Script, type ScriptCall } from "./script.js";

/**
 * KEYS: every charge's KEYS, one charge after another.
 * ARGV: 1 deadline (Redis ms; '' = none), 2 m (how many charges), 3 clock (h|r), 4 memo hash ttl ms
 *   ('0': no retries, no memos); then per charge:
 *   - plain (neither idempotency key nor cap): its number of budgets n, then now, nonce, limit_i,
 *     window_i (`plainCall`); its KEYS memo hash, budget_1..budget_n;
 *   - full (an idempotency key or a cap): 'f', its number of KEYS, its number of ARGV, then KEYS and
 *     ARGV as `chargeCall` builds them for `CHARGE`.
 *   A plain charge's shape is one argument (its KEYS and ARGV follow from n): each argument is one
 *   more string for Redis to build into ARGV, and each count one more conversion.
 * Reply: { 'b', Redis time (µs), then the parts of reply_1, ..., of reply_m } (flat: a full charge's as
 *   `CHARGE` answers, a plain one's as `CHARGE_PLAIN` does, or '!', message; see `batchStarts`);
 *   { 'e', Redis time (µs) } when the batch ran past its deadline and did nothing.
 */
export function batchSource(charge: string): string {
  return `-- KEYS and ARGV, named (batchCall in scripts/charge-batch.ts builds them)
local deadline, m, clock, memo_ttl, slack = ARGV[1], ARGV[2] + 0, ARGV[3], ARGV[4], ${EXPIRY_SLACK_MS}
${CHARGE_SHAPES}
-- a full charge, exactly as CHARGE (scripts/charge.ts) runs it, over its own KEYS and ARGV
local function charge_one(KEYS, ARGV)
${indented(charge)}
end

${NUM}${REDIS_TIME}if deadline ~= '' and rt > deadline + 0 then return { 'e', rt_us } end
-- with clock r the plain charges decide at the Redis time the batch started: read once, for all of them
local redis_ms = clock == 'r' and ${REDIS_MS}
${SAVE_MEMOS}
-- the plain charges' memos, looked up together (one HMGET per memo hash) and written together at the end
local found, writes = {}, {}
${MEMO_LOOKUP}

${PLAIN_STEPS}

-- the charges' replies one after another in one flat reply (Redis probes every table of a reply for
-- six special fields before converting it); the host splits it by each reply's kind and budgets
local res, k = { 'b', rt_us }, 2
for j = 1, m do
  local ok, reply
  if nb[j] then ok, reply = pcall(charge_plain, j) else ok, reply = pcall(charge_one, full_call(j)) end
  if not ok then reply = { '!', type(reply) == 'table' and tostring(reply.err) or tostring(reply) } end
  local parts = #reply
  for i = 1, parts do res[k + i] = reply[i] end
  k = k + parts
end
-- a memo that cannot be written loses only itself: the replies go back (a memo is for a lost reply;
-- a memo hash of the wrong type has failed the HMGET above already, before anything was charged)
for hash, fields in pairs(writes) do pcall(save_memos, hash, fields) end
return res
`;
}

/**
 * Where each charge's KEYS and ARGV are in the batch's (its shape: plain with n budgets, or full),
 * and the accessors `charge_one` and the plain steps read them through.
 */
const CHARGE_SHAPES = `-- charge j: plain with nb[j] budgets, or full (nb[j] false: its counts of KEYS and ARGV are the two
-- arguments up to ARGV[at_arg[j]]); its KEYS and ARGV are the ones after KEYS[at_key[j]] and ARGV[at_arg[j]]
local nb, at_key, at_arg = {}, {}, {}
local next_key, next_arg = 0, 4
for j = 1, m do
  local shape = ARGV[next_arg + 1]
  if shape == 'f' then
    local nk, na = ARGV[next_arg + 2] + 0, ARGV[next_arg + 3] + 0
    nb[j], at_key[j], at_arg[j] = false, next_key, next_arg + 3
    next_key, next_arg = next_key + nk, next_arg + 3 + na
  else
    local n = shape + 0
    nb[j], at_key[j], at_arg[j] = n, next_key, next_arg + 1
    next_key, next_arg = next_key + 1 + n, next_arg + 3 + 2 * n
  end
end
-- a full charge's KEYS and ARGV, as CHARGE takes them (the deadline is the batch's, checked once)
local function full_call(j)
  local keys, args = {}, {}
  for i = 1, ARGV[at_arg[j] - 1] + 0 do keys[i] = KEYS[at_key[j] + i] end
  for i = 1, ARGV[at_arg[j]] + 0 do args[i] = ARGV[at_arg[j] + i] end
  args[${CHARGE_TIMED.deadlineArg + 1}] = ''
  return keys, args
end
-- a plain charge's memo hash, now (as text), nonce and number of budgets; after plain_call(j),
-- plain_budget(i) is its budget i: key, window (as text), limit (as text)
local key_base, arg_base = 0, 0
local function plain_call(j)
  key_base, arg_base = at_key[j] + 1, at_arg[j] + 2
  return KEYS[at_key[j] + 1], ARGV[at_arg[j] + 1], ARGV[at_arg[j] + 2], nb[j]
end
local function plain_budget(i)
  return KEYS[key_base + i], ARGV[arg_base + 2 * i], ARGV[arg_base + 2 * i - 1]
end
`;

/** A plain charge's run (its memo kept for the end, saved with `save_memos`). */
const PLAIN_STEPS = `${REPLAY_PLAIN}

-- a plain charge's memo, kept for the end (written with its hash's others: one HSET per memo hash)
local function keep_memo(hash, nonce, res, n, now)
${indented(PLAIN_MEMO)}
  local fields = writes[hash]
  if not fields then fields = {}; writes[hash] = fields end
  fields[#fields + 1], fields[#fields + 2] = nonce, memo
end

-- a plain charge: runCharge's budget steps (src/charge.ts; with neither idempotency key nor cap it
-- stops there), the same text CHARGE runs, and its memo kept for the end
local function charge_plain(j)
  local hash, now_text, nonce, n = plain_call(j)
  if found[j] then return replay_plain(found[j]) end
  local now = redis_ms or now_text + 0
  local res, spent
${indented(budgetSteps("plain_budget", "plain"))}
  if memo_ttl ~= '0' then keep_memo(hash, nonce, res, n, now) end
  return res
end`;

/** The plain charges' memo lookups: their nonces, grouped by memo hash, one HMGET per hash. */
const MEMO_LOOKUP = `local function look_up_memos()
  local groups = {}
  for j = 1, m do
    if nb[j] then
      local hash, _, nonce = plain_call(j)
      local group = groups[hash]
      if not group then group = { js = {}, nonces = {} }; groups[hash] = group end
      group.js[#group.js + 1], group.nonces[#group.nonces + 1] = j, nonce
    end
  end
  for hash, group in pairs(groups) do
    local memos = redis.call('HMGET', hash, unpack(group.nonces))
    for i = 1, #group.js do found[group.js[i]] = memos[i] end
  end
end
if memo_ttl ~= '0' then look_up_memos() end`;

/** The charges of one batch, run one after another (see {@link batchSource}). */
export const CHARGE_BATCH: Script = {
  source: batchSource(CHARGE.source),
  sha: "666d812e2426212b6f4427cb7856e9028cd3d735",
};

/**
 * Encodes KEYS and ARGV of `CHARGE_BATCH` from its charges (one store's, at least one: they share the
 * clock and the memo's lifetime, read from the first).
 *
 * @param plainOf - which charges take the plain path (default {@link isPlain}; a bench measures a
 *   plain charge run as `CHARGE` with `() => false`).
 */
export function batchCall(inputs: readonly ChargeCallInput[], plainOf: (input: ChargeCallInput) => boolean = isPlain): ScriptCall {
  const { clock, memoTtlMs } = inputs[0]!;
  const keys: string[] = [];
  const args: string[] = ["", String(inputs.length), clock, String(memoTtlMs)];
  for (const input of inputs) {
    const plain = plainOf(input);
    const call = plain ? plainCall(input) : chargeCall(input);
    for (const key of call.keys) keys.push(key);
    if (plain) args.push(String(input.budgets.length));
    else args.push("f", String(call.keys.length), String(call.args.length));
    for (const arg of call.args) args.push(arg);
  }
  return { keys, args };
}

/**
 * Where each charge's reply starts in a batch's reply (and, last, where the reply ends). They come
 * one after another in one flat reply, each as long as its kind and its charge's budgets make it: an
 * error { '!', message } 2 parts, a plain charge's (S, C) 3 + 2n, a full charge's 5 + 2n. A reply
 * whose parts do not add up so is refused whole (no charge is ever answered from another's parts).
 *
 * @param budgets - each charge's number of budgets, in the batch's order.
 */
function batchStarts(reply: unknown, budgets: readonly number[]): number[] {
  const unexpected = () => new Error(`newsletter-policy/redis: unexpected reply to a batch of ${budgets.length} charges: ${String(reply)}`);
  if (!Array.isArray(reply) || String(reply[0]) !== "b") throw unexpected();
  const starts: number[] = [];
  let at = 2;
  for (const n of budgets) {
    starts.push(at);
    const kind = String(reply[at]);
    at += kind === "!" ? 2 : windowsFrom(kind) + 2 * n;
    if (at > reply.length) throw unexpected();
  }
  if (at !== reply.length) throw unexpected();
  starts.push(at);
  return starts;
}

/** A batch's reply split into its charges' replies (see {@link batchStarts}). */
export function batchReplies(reply: unknown, budgets: readonly number[]): unknown[][] {
  const starts = batchStarts(reply, budgets);
  return budgets.map((_, j) => (reply as unknown[]).slice(starts[j], starts[j + 1]));
}

/**
 * Decodes a batch's reply: per charge, its outcome or the error it answered.
 *
 * @param budgets - each charge's number of budgets, in the batch's order.
 */
export function decodeBatch(reply: unknown, budgets: readonly number[]): (ChargeOutcome | Error)[] {
  const starts = batchStarts(reply, budgets);
  // an array by now (batchStarts refused anything else), read into parts as decodeCharge reads one
  const flat = parts(reply, "charge");
  const out: (ChargeOutcome | Error)[] = [];
  for (let j = 0; j < budgets.length; j++) {
    const at = starts[j]!;
    if (text(flat[at]) === "!") out.push(new Error(`newsletter-policy/redis: ${text(flat[at + 1])}`));
    else {
      try {
        out.push(outcomeOf(flat, at, starts[j + 1]));
      } catch (error) {
        out.push(error instanceof Error ? error : new Error(String(error)));
      }
    }
  }
  return out;
}
