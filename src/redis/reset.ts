/**
 * Resets in Redis, in one round trip: one Lua script deletes a credential's budget windows, a day's
 * daily-cap set and the idempotency records listed in the credential's index set (which the charge
 * script keeps: every record it creates is added to `<prefix>i:<scope>`, in the credential's slot with a cluster). No SCAN: the keys are
 * known from the key layout and the index.
 */
import { createHash } from "node:crypto";
import type { ResetRequest } from "../reset.js";
import type { Script } from "./scripts.js";

/** The store key of the index set of a credential's idempotency records (`ChargeRequest.idempotency.scope`). */
export function indexKey(scope: string): string {
  return `i:${scope}`;
}

/**
 * KEYS: window_1..window_n, cap_1..cap_m (without the day), [index set].
 * ARGV: 1 clock (h|r), 2 now, 3 n, 4 m, 5 index (1|0), 6 move a day's members aside (1: Redis
 *   Cluster, see below | 0), then day_j, offset_j per cap.
 * Reply: 1.
 */
const source = `
local now
if ARGV[1] == 'r' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[2])
end
local function num(x)
  if x == math.floor(x) and x > -1e15 and x < 1e15 then return string.format('%d', x) end
  return string.format('%.17g', x)
end
local n, m = tonumber(ARGV[3]), tonumber(ARGV[4])
for i = 1, n do redis.call('DEL', KEYS[i]) end
for j = 1, m do
  local day = tonumber(ARGV[5 + 2 * j])
  -- with Redis's clock, today is Redis's today (as the charge script counts it)
  if ARGV[1] == 'r' then day = math.floor((now + tonumber(ARGV[6 + 2 * j])) / 86400000) end
  -- with a cluster the day's members move aside to '<set>:r' rather than vanish: they count toward
  -- nothing, but the cluster store still finds there that a key's charge was made (a retry of it
  -- stays a replay, as in MemoryStore and a single primary, whose idempotency records keep the charge)
  local set = KEYS[n + j] .. ':' .. num(day)
  local ttl = redis.call('PTTL', set)
  if ARGV[6] == '1' and ttl > 0 then
    redis.call('SUNIONSTORE', set .. ':r', set .. ':r', set)
    redis.call('PEXPIRE', set .. ':r', ttl)
  end
  redis.call('DEL', set)
end
if ARGV[5] == '1' then
  local index = KEYS[n + m + 1]
  local records = redis.call('SMEMBERS', index)
  for i = 1, #records, 500 do
    redis.call('UNLINK', unpack(records, i, math.min(i + 499, #records)))
  end
  redis.call('DEL', index)
end
return 1
`;

/** The reset script and its SHA-1, for `EVALSHA` with an `EVAL` fallback. */
export const RESET: Script = { source, sha: createHash("sha1").update(source).digest("hex") };

/**
 * The keys and arguments of one reset call.
 *
 * @param redisKey - a store key as the store names it in Redis (its prefix, and its hash tag with a cluster).
 * @param cluster - the store is a cluster store: a day's members are moved aside, not deleted.
 */
export function resetCall(redisKey: (key: string) => string, clock: "h" | "r", request: ResetRequest, now: number, cluster = false): { keys: string[]; args: string[] } {
  const keys = [...request.windows.map(redisKey), ...request.caps.map((c) => redisKey(c.key))];
  const scope = request.idempotencyScope;
  if (scope !== undefined) keys.push(redisKey(indexKey(scope)));
  const args = [clock, String(now), String(request.windows.length), String(request.caps.length), scope === undefined ? "0" : "1", cluster ? "1" : "0"];
  for (const cap of request.caps) args.push(String(cap.day), String(cap.offsetMs));
  return { keys, args };
}
