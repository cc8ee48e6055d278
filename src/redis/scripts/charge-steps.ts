/**
 * The steps of the charge order, as Lua local functions over the call's state: each of `runCharge`'s
 * steps (src/charge.ts) and the helpers they share. Composed into `CHARGE` and `CLUSTER_STEP1` by
 * `chargeSource` (charge.ts), after the header that names KEYS and ARGV (`n`, `budget_keys`, `wins`,
 * `idem_key`, …) and the prelude (`num`, `rt`, `now`, `read_window`, `day_of`).
 */
export const CHARGE_STEPS = `
-- this call's budgets, as read and then as charged; the idempotency record while it lives
local counts, resets, starts, sizes = {}, {}, {}, {}
local live

-- { kind, Redis time, now ('' with the host clock), a, b, count_1, resetAt_1, ..., extra... }
local function reply(kind, a, b, extra)
  local res = { kind, num(rt), clock == 'r' and num(now) or '', a, b }
  for i = 1, n do
    res[#res + 1] = num(counts[i])
    res[#res + 1] = num(resets[i])
  end
  if extra then for _, x in ipairs(extra) do res[#res + 1] = x end end
  return res
end

-- this call was sent before (the store retried after a timeout): its reply as it was, at this Redis
-- time. Memos are fields of one hash per store and time slot (memo_key), named by the call's nonce.
local function remembered()
  local memo = redis.call('HGET', memo_key, nonce)
  if not memo then return nil end
  local res = {}
  for part in string.gmatch(memo, '([^\\31]*)\\31') do res[#res + 1] = part end
  res[2] = num(rt)
  return res
end

local function remember(res)
  if memo_ttl ~= '0' then
    -- each part ends with byte 31 (no reply part holds a control character); the hash expires as a whole
    redis.call('HSET', memo_key, nonce, table.concat(res, '\\31') .. '\\31')
    redis.call('PEXPIRE', memo_key, memo_ttl, 'NX')
  end
  return res
end

-- a key lives until what it holds ends (a relative expiry, in the deciding clock), plus the slack
local function expire_with(key, ends)
  redis.call('PEXPIRE', key, math.max(1, math.ceil(ends - now)) + slack)
end

-- runCharge's first step: every budget's window; true when one is spent
local function read_budgets()
  local spent = false
  for i = 1, n do
    counts[i], resets[i], starts[i], sizes[i] = read_window(budget_keys[i], wins[i], now)
    if counts[i] >= limits[i] then spent = true end
  end
  return spent
end

-- runCharge's second step: charge every budget
local function charge_budgets()
  for i = 1, n do
    local key, win = budget_keys[i], wins[i]
    if counts[i] == 0 then
      -- a window starts at its first charge, and its key expires with it
      counts[i], resets[i] = 1, now + win
      redis.call('HSET', key, 's', num(now), 'c', '1', 'w', win_texts[i])
      expire_with(key, resets[i])
    else
      -- an open window keeps its start (as runCharge computes it) and its expiry
      local start = resets[i] - win
      counts[i], resets[i] = counts[i] + 1, start + win
      if start == starts[i] then
        redis.call('HSET', key, 'c', num(counts[i]))
      else
        redis.call('HSET', key, 's', num(start), 'c', num(counts[i]))
      end
      if sizes[i] ~= win_texts[i] then
        -- the plan changed the window's size: the window keeps its start and now ends at start + the new size
        redis.call('HSET', key, 'w', win_texts[i])
        expire_with(key, resets[i])
      end
    end
  end
end

-- the idempotency record while it lives (runCharge's live), or nil
local function live_record()
  local r = redis.call('HMGET', idem_key, 'f', 'e', 'm', 'd', 'c')
  local e = tonumber(r[2])
  if r[1] and e and now < e then return { f = r[1], e = e, m = r[3], d = r[4], c = r[5] } end
  return nil
end

-- writes the idempotency record, live until e, with the cap charge it carries (day, member)
local function record(e, day, member)
  if not live then redis.call('DEL', idem_key) end
  if member then
    redis.call('HSET', idem_key, 'f', fingerprint, 'e', num(e), 'd', day, 'm', member)
  else
    redis.call('HSET', idem_key, 'f', fingerprint, 'e', num(e))
  end
  expire_with(idem_key, e)
  -- a new record joins the credential's index (scripts/reset.ts), which lives as long as its newest record
  if not live and index_key then
    redis.call('SADD', index_key, idem_key)
    expire_with(index_key, e)
  end
end

-- the day a cap charge counts in, and when it ends: the request's (dayOf on the host), or by Redis's clock
local function today()
  if clock == 'r' then return day_of(now, tonumber(day_offset)) end
  return tonumber(day_arg), tonumber(day_end)
end
`;
