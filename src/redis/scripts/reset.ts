/**
 * Resets in Redis, in one round trip: one Lua script deletes a credential's budget windows, a day's
 * daily-cap set and the idempotency records listed in the credential's index (which the charge
 * script keeps: every record it writes is added to the sorted set `<prefix>x:<scope>` by its end, in
 * the credential's slot with a cluster; an earlier version's set `<prefix>i:<scope>` is read too).
 * No SCAN: the keys are known from the key layout and the index.
 */
import type { ResetRequest } from "../../store.js";
import { indexKey, legacyIndexKey } from "../key-layout.js";
import { DAY_OF, NOW } from "./prelude.js";
import type { Script, ScriptCall } from "./script.js";
import { CHARGE_TIMED } from "./charge.js";
import type { Timed } from "../client.js";

/** `RESET`'s deadline argument (0-based in ARGV); its reply carries Redis's time as the charge scripts' do. */
export const RESET_TIMED: Timed = { ...CHARGE_TIMED, deadlineArg: 7 };

/**
 * KEYS: window_1..window_n, cap_1..cap_m (without the day), [index, earlier index set], this call's mark.
 * ARGV: 1 clock (h|r), 2 now, 3 n, 4 m, 5 index (1|0), 6 move a day's members aside (1: Redis
 *   Cluster, see below | 0), 7 the mark's lifetime in ms ('0': no retries, no mark), 8 deadline
 *   (Redis ms; '' = none), then day_j, offset_j per cap.
 * Reply: { 'd' (done) or 'e' (past its deadline: nothing cleared), Redis time (µs) }, as the charge
 * scripts' ({@link RESET_TIMED}).
 *
 * The mark makes the store's retry of a reset (after a timeout) clear nothing: a reset resent once
 * others have charged again would wipe their counts (found by a Redis review: one reset and a late
 * reply let a newsletter send 75 times in a day for a cap of 25). The deadline makes a reset the
 * caller was told had failed (`RedisTimeoutError`) clear nothing when Redis runs it later, after a
 * pause: it would wipe the counts made since (found by a Redis drill: a reset rejected during a
 * 2 s stop of Redis cleared a spent budget and a day's sends once Redis resumed).
 */
export const RESET: Script = {
  source: `-- KEYS and ARGV, named (resetCall in scripts/reset.ts builds them)
local clock, now_arg, n, m = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local indexed, move_aside, mark_ttl, deadline = ARGV[5] == '1', ARGV[6] == '1', ARGV[7], ARGV[8]
local caps, days, offsets = {}, {}, {}
for j = 1, m do caps[j], days[j], offsets[j] = KEYS[n + j], tonumber(ARGV[7 + 2 * j]), tonumber(ARGV[8 + 2 * j]) end
local index_key, legacy_key, mark_key = KEYS[n + m + 1], KEYS[n + m + 2], KEYS[#KEYS]
${NOW}${DAY_OF}
-- run after the caller gave up (a paused Redis): it was told the reset failed, so nothing is cleared
if deadline ~= '' and rt > deadline + 0 then return { 'e', rt_us } end
-- a resend of this call (the store's retry after a timeout) finds its mark: cleared already, nothing more
if mark_ttl ~= '0' and not redis.call('SET', mark_key, '1', 'NX', 'PX', mark_ttl) then return { 'd', rt_us } end
for i = 1, n do redis.call('DEL', KEYS[i]) end
for j = 1, m do
  local day = days[j]
  -- with Redis's clock, today is Redis's today (as the charge script counts it)
  if clock == 'r' then day = day_of(now, offsets[j]) end
  -- with a cluster the day's members move aside to '<set>:r' rather than vanish: they count toward
  -- nothing, but the cluster store still finds there that a key's charge was made (a retry of it
  -- stays a replay, as in MemoryStore and a single primary, whose idempotency records keep the charge)
  local set = caps[j] .. ':' .. num(day)
  local ttl = redis.call('PTTL', set)
  if move_aside and ttl > 0 then
    redis.call('SUNIONSTORE', set .. ':r', set .. ':r', set)
    redis.call('PEXPIRE', set .. ':r', ttl)
  end
  redis.call('DEL', set)
end
if indexed then
  for _, records in ipairs({ redis.call('ZRANGE', index_key, 0, -1), redis.call('SMEMBERS', legacy_key) }) do
    for i = 1, #records, 500 do
      redis.call('UNLINK', unpack(records, i, math.min(i + 499, #records)))
    end
  end
  redis.call('DEL', index_key, legacy_key)
end
return { 'd', rt_us }
`,
  sha: "328b2775f1390779275c7cd96486f8a494f6db9c",
};

/**
 * Encodes a `RESET` call.
 *
 * @param redisKey - a store key as the store names it in Redis (its prefix, and its hash tag with a cluster).
 * @param cluster - the store is a cluster store: a day's members are moved aside, not deleted.
 * @param mark - this call's mark (a store key, unique to the call) and its lifetime (0: no retries, no mark).
 */
export function resetCall(redisKey: (key: string) => string, clock: "h" | "r", request: ResetRequest, now: number, cluster = false, mark: { readonly key: string; readonly ttlMs: number } = { key: "reset-mark", ttlMs: 0 }): ScriptCall {
  const keys = [...request.windows.map(redisKey), ...request.caps.map((c) => redisKey(c.key))];
  const scope = request.idempotencyScope;
  if (scope !== undefined) keys.push(redisKey(indexKey(scope)), redisKey(legacyIndexKey(scope)));
  keys.push(redisKey(mark.key));
  // the deadline (ARGV 8) is set by the store's link as it sends (RESET_TIMED)
  const args = [clock, String(now), String(request.windows.length), String(request.caps.length), scope === undefined ? "0" : "1", cluster ? "1" : "0", String(mark.ttlMs), ""];
  for (const cap of request.caps) args.push(String(cap.day), String(cap.offsetMs));
  return { keys, args };
}
