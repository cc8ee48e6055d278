/**
 * Redis Cluster, step 2 of a send or schedule (the newsletter's slot): take the dispatch cap that
 * step 1 (cluster-step1.ts) handed over. The cap rules are `runCharge`'s cap step (src/charge.ts);
 * whether a key already counted is decided here, where the count lives (`counted`).
 */
import { CAP_GRACE_MS } from "../key-layout.js";
import { IDEMPOTENCY_TTL_MS } from "../../store.js";
import { COUNTED } from "./cluster-counted.js";
import { NUM, REDIS_TIME } from "./prelude.js";
import { parts, text, type Script, type ScriptCall } from "./script.js";

/**
 * KEYS: 1 memo hash, 2 cap key without the day. ARGV: 1 deadline (Redis ms, '' = none), 2 nonce,
 * 3 memo ttl ms ('0' = none), 4 the member to add, 5 the day the key's member was handed over
 * ('' = none), 6 day, 7 limit, 8 ttl ms of the day's set, 9 the key's member followed by '#'
 * ('' = no idempotency key).
 * Reply: { kind, Redis time (µs), a }: c (a = 1 counted now, 0 already counted: a replay),
 * r (cap_reached: a = count), or { 'e', Redis time (µs) } past the deadline (nothing done).
 */
export const CLUSTER_STEP2: Script = {
  source: `-- KEYS and ARGV, named (step2Call in scripts/cluster-step2.ts builds them)
local memo_key, cap_key = KEYS[1], KEYS[2]
local deadline, nonce, memo_ttl, member = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local handed_on, day, limit, set_ttl, key_prefix = ARGV[5], ARGV[6], tonumber(ARGV[7]), ARGV[8], ARGV[9]
${COUNTED}${NUM}${REDIS_TIME}if deadline ~= '' and rt > deadline + 0 then return { 'e', rt_us } end
if memo_ttl ~= '0' then
  local memo = redis.call('HGET', memo_key, nonce)
  if memo then return { string.sub(memo, 1, 1), rt_us, string.sub(memo, 3) } end
end
local function done(kind, a)
  if memo_ttl ~= '0' then
    redis.call('HSET', memo_key, nonce, kind .. ':' .. a)
    redis.call('PEXPIRE', memo_key, memo_ttl, 'NX')
  end
  return { kind, rt_us, a }
end
local set = cap_key .. ':' .. day
-- DESIGN §7: a key that already counted counts nothing more and is not refused by the cap. Its
-- charges are the members '<key member>#<call>' of the days around today (counted, in
-- cluster-counted.ts); a released one has left its set.
if key_prefix ~= '' and counted(cap_key, key_prefix, handed_on, day) then return done('c', '0') end
local count = redis.call('SCARD', set)
if count >= limit then return done('r', num(count)) end
redis.call('SADD', set, member)
redis.call('PEXPIRE', set, set_ttl)
return done('c', '1')
`,
  sha: "c954a09774970135f8cfcfb0a895cfe5d02a16af",
};


/** What one step 2 call is built from. */
export interface Step2Input {
  /** The memo hash and the cap key without the day, as Redis names them. */
  readonly memo: string;
  readonly cap: string;
  readonly nonce: string;
  readonly memoTtlMs: number;
  /** The member to add: unique per cap charge. */
  readonly member: string;
  /** The key's member (with an Idempotency-Key), whose charges start with `<member>#`. */
  readonly keyMember: string | undefined;
  /** The day the key's member was counted on ('' = none). */
  readonly countedOn: string;
  readonly day: string;
  readonly limit: number;
  /** When the day ends (ms) and the time the day was decided at (ms), by the deciding clock. */
  readonly resetAt: number;
  readonly decidedAt: number;
}

/** Encodes a `CLUSTER_STEP2` call; the day's set lives until the day ends + the cap grace + a key's life. */
export function step2Call(input: Step2Input): ScriptCall {
  const ttl = Math.max(1, Math.ceil(input.resetAt - input.decidedAt)) + CAP_GRACE_MS + IDEMPOTENCY_TTL_MS;
  const keyPrefix = input.keyMember === undefined ? "" : `${input.keyMember}#`;
  return {
    keys: [input.memo, input.cap],
    args: ["", input.nonce, String(input.memoTtlMs), input.member, input.countedOn, input.day, String(input.limit), String(ttl), keyPrefix],
  };
}

/** Step 2's answer: the cap was full, the charge was counted now, or the key had counted already. */
export type Step2Result = { readonly kind: "cap_reached"; readonly count: number } | { readonly kind: "counted" } | { readonly kind: "replay" };

/** Decodes a `CLUSTER_STEP2` reply. */
export function decodeStep2(reply: unknown): Step2Result {
  const second = parts(reply, "charge");
  const kind = text(second[0]);
  if (kind === "r") return { kind: "cap_reached", count: Number(second[2]) };
  if (kind !== "c") throw new Error(`newsletter-policy/redis: unexpected reply to charge: ${second.join(" ")}`);
  return text(second[2]) === "0" ? { kind: "replay" } : { kind: "counted" };
}
