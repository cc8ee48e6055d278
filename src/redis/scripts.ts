/**
 * The three Lua scripts of the Redis store: charge, release and read. `charge` is `runCharge` of
 * `charge.ts` line for line (budgets → idempotency → daily cap, all or nothing), over Redis keys;
 * differential tests hold the two together.
 *
 * Numbers cross the wire as strings printed with `%.17g`, which round-trips every double exactly,
 * so that windows and day ends agree with the in-memory store to the millisecond (and below).
 * Expiries are relative (`PEXPIRE` of the time left), never absolute: a host clock that is off
 * from Redis's clock moves no key's lifetime.
 */
import { createHash } from "node:crypto";

/** A script and its SHA-1, for `EVALSHA` with an `EVAL` fallback. */
export interface Script {
  readonly source: string;
  readonly sha: string;
}

function script(source: string): Script {
  return { source, sha: createHash("sha1").update(source).digest("hex") };
}

/** Time: the host's (`ARGV[1] == "h"`, `ARGV[2]` ms) or Redis's own (`TIME`); `rt` is always Redis's. */
const NOW = `
local function num(x)
  -- %d for whole numbers (every time and count of an integer clock) is three times cheaper than %.17g
  if x == math.floor(x) and x > -1e15 and x < 1e15 then return string.format('%d', x) end
  return string.format('%.17g', x)
end
-- Redis's own time (ms, to the microsecond), read on every call: the deadline is checked against it
local tm = redis.call('TIME')
local rt = tonumber(tm[1]) * 1000 + tonumber(tm[2]) / 1000
local now
if ARGV[1] == 'r' then
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
else
  now = tonumber(ARGV[2])
end
`;

/**
 * KEYS: seq, memo hash (this store's, this time slot's), budget_1..budget_n, [idempotency record], [cap key without the day].
 * ARGV: 1 clock (h|r), 2 now, 3 this call's nonce, 4 memo hash ttl ms ('0': no retries, nothing to remember), 5 n, 6 refused (1|0),
 *   7 fingerprint ('' = no idempotency key), 8 key ttl ms, 9 day, 10 cap limit ('' = no cap),
 *   11 day end ms, 12 day offset ms, 13 cap grace ms, 14 seq ttl ms, 15 expiry slack ms,
 *   16 deadline (Redis ms; '' = none), then limit_i, window_i, then '1' when the last KEY is the
 *   credential's idempotency index (reset.ts).
 * Reply: { kind, Redis time, now ('' with the host clock), a, b, count_1, resetAt_1, ... } where kind is
 *   s (budget_spent), c (charged: a = replay 1|0, b = member), x (conflict: a = fingerprint),
 *   r (cap_reached: a = count); or { 'e', Redis time } when the call ran past its deadline and did nothing.
 */
const CHARGE_HEAD = `-- the caller gave up (the store answered it 503): charge nothing for a request that was not admitted
if ARGV[16] ~= '' and rt > tonumber(ARGV[16]) then return { 'e', num(rt) } end

-- this call was sent before (the store retried after a timeout): answer it as it was answered.
-- Memos are fields of one hash per store and time slot (KEYS[2]), named by the call's nonce (ARGV[3]).
local memo = redis.call('HGET', KEYS[2], ARGV[3])
if memo then
  local res = {}
  for part in string.gmatch(memo, '([^\\31]*)\\31') do res[#res + 1] = part end
  res[2] = num(rt)
  return res
end

local n = tonumber(ARGV[5])
local slack = tonumber(ARGV[15])
local counts, resets, starts, sizes, spent = {}, {}, {}, {}, false
for i = 1, n do
  local limit, win = tonumber(ARGV[15 + 2 * i]), tonumber(ARGV[16 + 2 * i])
  local r = redis.call('HMGET', KEYS[2 + i], 's', 'c', 'w')
  local s, c, w = tonumber(r[1]), tonumber(r[2]), tonumber(r[3])
  -- readWindow (charge.ts): a window is open until start + window (fixed windows), and no longer than
  -- start + the size it was last charged with ('w')
  if s == nil or c == nil or now >= s + win or (w ~= nil and now >= s + w) then
    counts[i], resets[i] = 0, 0
  else
    -- a window stamped after now (the host clock stepped back) starts now: its reset is never
    -- longer than the window (readWindow in charge.ts)
    counts[i], resets[i], starts[i] = c, math.min(s, now) + win, s
  end
  sizes[i] = r[3]
  if counts[i] >= limit then spent = true end
end

local function reply(kind, a, b, extra)
  local res = { kind, num(rt), ARGV[1] == 'r' and num(now) or '', a, b }
  for i = 1, n do
    res[#res + 1] = num(counts[i])
    res[#res + 1] = num(resets[i])
  end
  if extra then for _, x in ipairs(extra) do res[#res + 1] = x end end
  return res
end

-- DESIGN §2: a request refused because a budget is spent charges nothing
if spent then return reply('s', '', '') end

local function remember(res)
  if ARGV[4] ~= '0' then
    -- each part ends with byte 31 (no reply part holds a control character); the hash expires as a whole
    redis.call('HSET', KEYS[2], ARGV[3], table.concat(res, '\\31') .. '\\31')
    redis.call('PEXPIRE', KEYS[2], ARGV[4], 'NX')
  end
  return res
end

for i = 1, n do
  local win = tonumber(ARGV[16 + 2 * i])
  if counts[i] == 0 then
    -- a window starts at its first charge, and its key expires with it
    counts[i], resets[i] = 1, now + win
    redis.call('HSET', KEYS[2 + i], 's', num(now), 'c', '1', 'w', ARGV[16 + 2 * i])
    redis.call('PEXPIRE', KEYS[2 + i], math.max(1, math.ceil(resets[i] - now)) + slack)
  else
    -- an open window keeps its start (as charge.ts computes it) and its expiry
    local start = resets[i] - win
    counts[i], resets[i] = counts[i] + 1, start + win
    if start == starts[i] then
      redis.call('HSET', KEYS[2 + i], 'c', num(counts[i]))
    else
      redis.call('HSET', KEYS[2 + i], 's', num(start), 'c', num(counts[i]))
    end
    if sizes[i] ~= ARGV[16 + 2 * i] then
      -- the plan changed the window's size: the window keeps its start and now ends at start + the new size
      redis.call('HSET', KEYS[2 + i], 'w', ARGV[16 + 2 * i])
      redis.call('PEXPIRE', KEYS[2 + i], math.max(1, math.ceil(resets[i] - now)) + slack)
    end
  end
end
if ARGV[6] == '1' then return remember(reply('c', '0', '')) end

local at = 3 + n
local idem, live = nil, nil
if ARGV[7] ~= '' then
  idem = KEYS[at]
  at = at + 1
  local r = redis.call('HMGET', idem, 'f', 'e', 'm', 'd', 'c')
  local e = tonumber(r[2])
  if r[1] and e and now < e then live = { f = r[1], e = e, m = r[3], d = r[4], c = r[5] } end
  if live and live.f ~= ARGV[7] then return remember(reply('x', live.f, '')) end
end

-- the day a cap charge counts in, and when it ends: dayOf in keys.ts, with Redis's clock when it decides
local function today()
  if ARGV[1] == 'r' then
    local offset = tonumber(ARGV[12])
    local day = math.floor((now + offset) / 86400000)
    return day, (day + 1) * 86400000 - offset
  end
  return tonumber(ARGV[9]), tonumber(ARGV[11])
end

local function record(e, day, member)
  if not live then redis.call('DEL', idem) end
  if member then
    redis.call('HSET', idem, 'f', ARGV[7], 'e', num(e), 'd', day, 'm', member)
  else
    redis.call('HSET', idem, 'f', ARGV[7], 'e', num(e))
  end
  redis.call('PEXPIRE', idem, math.max(1, math.ceil(e - now)) + slack)
  -- a new record joins the credential's index (reset.ts), which lives as long as its newest record
  if not live and ARGV[17 + 2 * n] == '1' then
    redis.call('SADD', KEYS[#KEYS], idem)
    redis.call('PEXPIRE', KEYS[#KEYS], math.max(1, math.ceil(e - now)) + slack)
  end
end

`;

export const CHARGE = script(`${NOW}${CHARGE_HEAD}if ARGV[10] ~= '' then
  -- DESIGN §7: a key that already counted counts nothing more and is not refused by the cap
  if live and live.m then return remember(reply('c', '1', '')) end
  local day, resetAt = today()
  local dayText = num(day)
  local set = KEYS[at] .. ':' .. dayText
  local count = redis.call('SCARD', set)
  if count >= tonumber(ARGV[10]) then return remember(reply('r', num(count), '')) end
  local member
  repeat
    member = 'm' .. num(redis.call('INCR', KEYS[1]))
  until redis.call('SADD', set, member) == 1
  redis.call('PEXPIRE', KEYS[1], ARGV[14])
  local ttl = math.max(1, math.ceil(resetAt - now)) + tonumber(ARGV[13])
  redis.call('PEXPIRE', set, ttl)
  -- the cap key's latest day: a ticket of an earlier day no longer uncounts (as MemoryStore)
  redis.call('SET', KEYS[at] .. ':day', dayText, 'PX', ttl)
  if idem then record(live and live.e or now + tonumber(ARGV[8]), dayText, member) end
  return remember(reply('c', live and '1' or '0', member))
end

if idem and not live then record(now + tonumber(ARGV[8])) end
return remember(reply('c', live and '1' or '0', ''))
`);

/**
 * KEYS: the day's cap set, the cap key's latest-day marker, [idempotency record].
 * ARGV: 1 clock, 2 now, 3 member, 4 day. Reply: 1 when the member was still counted, else 0.
 */
export const RELEASE = script(`${NOW}
local removed = 0
local latest = redis.call('GET', KEYS[2])
if not latest or tonumber(latest) == tonumber(ARGV[4]) then
  removed = redis.call('SREM', KEYS[1], ARGV[3])
end
if KEYS[3] then
  local r = redis.call('HMGET', KEYS[3], 'e', 'm')
  local e = tonumber(r[1])
  -- DESIGN §7: once released, the key counts again on its next allowed use
  if e and now < e and r[2] == ARGV[3] then redis.call('HDEL', KEYS[3], 'd', 'm') end
end
return removed
`);

/**
 * KEYS: budget_1..budget_n. ARGV: 1 clock, 2 now, then window_i.
 * Reply: { count_1, resetAt_1, ... } (0, 0 for a budget with no open window). With Redis's clock,
 * each resetAt is moved into the host's clock (host now + time left by Redis's clock), so that the
 * host measures the same seconds left as a decision's headers give.
 */
export const READ = script(`${NOW}
local shift = tonumber(ARGV[2]) - now
local res = {}
for i = 1, #KEYS do
  local win = tonumber(ARGV[2 + i])
  local r = redis.call('HMGET', KEYS[i], 's', 'c', 'w')
  local s, c, w = tonumber(r[1]), tonumber(r[2]), tonumber(r[3])
  if s == nil or c == nil or now >= s + win or (w ~= nil and now >= s + w) then
    res[2 * i - 1], res[2 * i] = '0', '0'
  else
    res[2 * i - 1], res[2 * i] = num(c), num(math.min(s, now) + win + shift)
  end
end
return res
`);

/**
 * Redis Cluster, step 1 of a send or schedule (the credential's slot): `CHARGE` up to the dispatch
 * cap, which it does not touch. KEYS and ARGV as `CHARGE`, but ARGV[13] is the cap's store key
 * (recorded on the idempotency record) and ARGV[14] the member a new cap charge will use (no
 * sequence key). Reply as `CHARGE`, plus kind p (proceed to step 2:
 * a = replay 1|0, b = member, then after the windows: the day the key's member was counted on
 * ('' = a new member), fresh (1 = this call created the idempotency record), day, day end, the cap
 * the key's member was counted toward ('' = this one)).
 */
const CLUSTER_CAP = `if ARGV[10] ~= '' then
  -- Redis Cluster, step 1 of 2: the dispatch cap lives in the newsletter's slot, where step 2 takes
  -- it. Here: pick the member the cap charge will use and hand it over. A key that already carries
  -- a member hands that one over, and step 2 answers a replay when it is still counted.
  local day, resetAt = today()
  local dayText = num(day)
  if live and live.m then return remember(reply('p', '1', live.m, { live.d or '', '0', dayText, num(resetAt), live.c or '' })) end
  local member, fresh = ARGV[14], '0'
  if idem then
    -- written before the cap is known: a key whose member step 2 does not count is a key that does
    -- not count; a fresh record step 2 refuses is deleted again by the store. 'c' names the cap.
    if not live then fresh = '1' end
    record(live and live.e or now + tonumber(ARGV[8]), dayText, member)
    redis.call('HSET', idem, 'c', ARGV[13])
  end
  return remember(reply('p', live and '1' or '0', member, { '', fresh, dayText, num(resetAt), '' }))
end

if idem and not live then record(now + tonumber(ARGV[8])) end
return remember(reply('c', live and '1' or '0', ''))
`;

export const CLUSTER_STEP1 = script(`${NOW}${CHARGE_HEAD}${CLUSTER_CAP}`);

/**
 * Redis Cluster, step 2 of a send or schedule (the newsletter's slot): take the dispatch cap.
 * KEYS: memo hash, cap key without the day. ARGV: 1 deadline (Redis ms, '' = none), 2 nonce,
 * 3 memo ttl ms ('0' = none), 4 the member to add, 5 the day the key's member was handed over
 * ('' = none), 6 day, 7 limit, 8 ttl ms of the day's set, 9 the key's member followed by '#'
 * ('' = no idempotency key).
 * Reply: { kind, Redis time, a }: c (a = 1 counted now, 0 already counted: a replay),
 * r (cap_reached: a = count), or { 'e', Redis time } past the deadline (nothing done).
 */
const COUNTED = `
local function counted(base, prefix, days)
  local n = #prefix
  for _, d in ipairs(days) do
    if d ~= '' then
      -- the day's set, and the members a reset moved aside (reset.ts): still charges the key made
      for _, set in ipairs({ base .. ':' .. d, base .. ':' .. d .. ':r' }) do
        for _, m in ipairs(redis.call('SMEMBERS', set)) do
          if string.sub(m, 1, n) == prefix then return true end
        end
      end
    end
  end
  return false
end
`;

export const CLUSTER_STEP2 = script(`${COUNTED}
local function num(x)
  if x == math.floor(x) and x > -1e15 and x < 1e15 then return string.format('%d', x) end
  return string.format('%.17g', x)
end
local tm = redis.call('TIME')
local rt = tonumber(tm[1]) * 1000 + tonumber(tm[2]) / 1000
if ARGV[1] ~= '' and rt > tonumber(ARGV[1]) then return { 'e', num(rt) } end
if ARGV[3] ~= '0' then
  local memo = redis.call('HGET', KEYS[1], ARGV[2])
  if memo then return { string.sub(memo, 1, 1), num(rt), string.sub(memo, 3) } end
end
local function done(kind, a)
  if ARGV[3] ~= '0' then
    redis.call('HSET', KEYS[1], ARGV[2], kind .. ':' .. a)
    redis.call('PEXPIRE', KEYS[1], ARGV[3], 'NX')
  end
  return { kind, num(rt), a }
end
local base, member, day = KEYS[2], ARGV[4], ARGV[6]
local set = base .. ':' .. day
-- DESIGN §7: a key that already counted counts nothing more and is not refused by the cap. Its
-- charges are the members '<key member>#<call>' of the day it was counted on, the day before
-- today, or today (a key lives 24 h); a released one has left its set.
if ARGV[9] ~= '' and counted(base, ARGV[9], { ARGV[5], tostring(tonumber(day) - 1), day }) then return done('c', '0') end
local count = redis.call('SCARD', set)
if count >= tonumber(ARGV[7]) then return done('r', num(count)) end
redis.call('SADD', set, member)
redis.call('PEXPIRE', set, ARGV[8])
-- the cap key's latest day: a ticket of an earlier day no longer uncounts (as MemoryStore)
redis.call('SET', base .. ':day', day, 'PX', ARGV[8])
return done('c', '1')
`);

/**
 * Redis Cluster: a fresh idempotency record written by step 1 whose cap step 2 refused is deleted,
 * as if it had never been written (only an allowed write records its key). KEYS: the record.
 * ARGV: 1 the member step 1 wrote. Reply: 1 when deleted.
 */
export const CLUSTER_UNDO = script(`
if redis.call('HGET', KEYS[1], 'm') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);

/**
 * Redis Cluster: uncount a dispatch charge (the newsletter's slot). The member leaves its day's set
 * whatever the day, so the key that carries it counts again; the reply says whether it was counted
 * in the cap's latest day. KEYS: the day's set, the latest-day marker, the day's members a reset
 * moved aside. ARGV: 1 member, 2 day.
 */
export const CLUSTER_RELEASE = script(`
local removed = redis.call('SREM', KEYS[1], ARGV[1])
-- a member a reset moved aside (reset.ts) is uncounted already; released, its key counts again
redis.call('SREM', KEYS[3], ARGV[1])
local latest = redis.call('GET', KEYS[2])
if latest and tonumber(latest) ~= tonumber(ARGV[2]) then return 0 end
return removed
`);

/**
 * Redis Cluster: is a key's member still counted in another cap's day (a key reused on another
 * newsletter)? KEYS: that cap key without the day. ARGV: 1 the key's member followed by '#', 2–4 days
 * to look in. Reply: 1 or 0.
 */
export const CLUSTER_COUNTED = script(`${COUNTED}
if counted(KEYS[1], ARGV[1], { ARGV[2], ARGV[3], ARGV[4] }) then return 1 end
return 0
`);
