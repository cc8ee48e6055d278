/**
 * The steps of the charge order, as Lua local functions over the call's state: each of `runCharge`'s
 * steps (src/charge.ts) and the helpers they share. Composed into `CHARGE` and `CLUSTER_STEP1` by
 * `chargeSource` (charge.ts), after the header that names KEYS and ARGV (`n`, `budget(i)`,
 * `idem_key`, …) and the prelude (`num`, `rt`, `now`, `read_window`, `day_of`). The budget steps
 * (`BUDGET_RULES`) take the budget accessor, `now` and the windows table as parameters, so that
 * `CHARGE_BATCH` runs its plain charges through the very same functions.
 *
 * Redis runs a script's whole chunk on every call, so every `local function` is a new closure per
 * call, each local it captures one more upvalue to link, each table one more object (and each time
 * it grows, one more resize): the steps are in pieces, each defined just before the order first needs
 * it, so that a call which returns early (a deadline, a retry, a spent budget, a request with neither
 * idempotency key nor cap) builds none of the later ones; a budget's key, window and limit are read
 * from KEYS/ARGV by `budget(i)`, not copied into tables; the windows are one table, not one per value;
 * and each text is converted to a number once (`tonumber` is Lua's strtod: a cost per call).
 * Measured with callgrind (instructions per EVALSHA), not guessed.
 */

/**
 * runCharge's two budget steps and the numbers of a reply, over a budget accessor (`budget(i)`:
 * key, window as text, limit as text): `CHARGE` passes its own, and `CHARGE_BATCH` runs its plain
 * charges through the same functions (defined once per batch there, not once per charge).
 */
export const BUDGET_RULES = `
-- a number of a reply: a whole one as a Redis integer (nothing to format; the client reads it as it
-- is, and a memo's table.concat writes it exactly below 1e14), any other as text
local function wire(x)
  if x == math.floor(x) and x > -1e14 and x < 1e14 then return x end
  return num(x)
end

-- a charge's reply: { kind, Redis time, now ('' with the host clock), a, b, count_1, resetAt_1, ... }
local function answer(kind, a, b, now, n, windows)
  local res = { kind, num(rt), clock == 'r' and num(now) or '', a, b }
  for i = 1, n do res[4 + 2 * i], res[5 + 2 * i] = wire(windows[5 * i - 4]), wire(windows[5 * i - 3]) end
  return res
end

-- mirrors runCharge's first step (src/charge.ts): every budget's window; true when one is spent. Budget i's
-- count, reset, start, stored size (as text) and window (ms) go to windows[5i - 4 .. 5i].
local function read_budgets(budget, n, now, windows)
  local spent = false
  for i = 1, n do
    local key, win_text, limit = budget(i)
    local win = tonumber(win_text)
    local count, reset, start, size = read_window(key, win, now)
    windows[5 * i - 4], windows[5 * i - 3], windows[5 * i - 2], windows[5 * i - 1], windows[5 * i] = count, reset, start, size, win
    if count >= tonumber(limit) then spent = true end
  end
  return spent
end

-- a key lives until what it holds ends (a relative expiry, in the deciding clock), plus the slack
local function expire_after(key, ends, now)
  redis.call('PEXPIRE', key, math.max(1, math.ceil(ends - now)) + slack)
end

-- mirrors runCharge's second step (src/charge.ts): charge every budget
local function charge_budgets(budget, n, now, windows)
  for i = 1, n do
    local key, win_text = budget(i)
    local win, count, reset = windows[5 * i], windows[5 * i - 4], windows[5 * i - 3]
    if count == 0 then
      -- a window starts at its first charge, and its key expires with it
      count, reset = 1, now + win
      redis.call('HSET', key, 's', num(now), 'c', '1', 'w', win_text)
      expire_after(key, reset, now)
    else
      -- an open window keeps its start (as runCharge computes it) and its expiry
      local start = reset - win
      count, reset = count + 1, start + win
      if start == windows[5 * i - 2] then
        redis.call('HSET', key, 'c', num(count))
      else
        redis.call('HSET', key, 's', num(start), 'c', num(count))
      end
      if windows[5 * i - 1] ~= win_text then
        -- the plan changed the window's size: the window keeps its start and now ends at start + the new size
        redis.call('HSET', key, 'w', win_text)
        expire_after(key, reset, now)
      end
    end
    windows[5 * i - 4], windows[5 * i - 3] = count, reset
  end
end
`;

/**
 * A charge with neither idempotency key nor cap (a plain charge): runCharge's budget steps, which is
 * all of runCharge for it, and its reply in `res`; over the budget accessor named `budget` and the
 * locals `n` and `now`. `CHARGE_PLAIN` runs it as its main chunk, `CHARGE_BATCH` for each of its plain
 * charges.
 */
export function plainSteps(budget: string): string {
  return `local windows = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
local res
-- DESIGN §2: a request refused because a budget is spent charges nothing (its reply remembered too)
if read_budgets(${budget}, n, now, windows) then
  res = answer('s', '', '', now, n, windows)
else
  charge_budgets(${budget}, n, now, windows)
  res = answer('c', '0', '', now, n, windows)
end`;
}

/**
 * A reply as its memo holds it, and a memo answered again (a charge sent twice: the store's retry).
 * Memos are MessagePack (Redis's `cmsgpack`): a whole number stays a Redis integer when replayed,
 * and nothing is formatted as text (the text memo this replaced spent about a twentieth of a plain
 * charge's instructions in Redis turning numbers into text, measured with callgrind).
 */
export const MEMO = `
-- a reply as its memo remembers it: MessagePack keeps each part's type, and formats no number as text
local function memo_of(res)
  return cmsgpack.pack(res)
end

-- memos of one hash (nonce, memo, nonce, memo, ...); the hash expires as a whole
local function save_memos(hash, fields)
  redis.call('HSET', hash, unpack(fields))
  redis.call('PEXPIRE', hash, memo_ttl, 'NX')
end

-- a remembered reply, answered again at this Redis time
local function replay(memo)
  local res = cmsgpack.unpack(memo)
  res[2] = num(rt)
  return res
end
`;

/** `CHARGE`'s own, before the budgets' step: the call's windows and its reply. */
export const BUDGET_STEPS = `
-- this call's budgets, as read and then as charged (read_budgets): budget i's at windows[5i - 4 .. 5i];
-- one table sized for two budgets (each table, and each time one grows, is a cost on every call)
local windows = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

-- answer's reply, then extra...
local function reply(kind, a, b, extra)
  local res = answer(kind, a, b, now, n, windows)
  if extra then for i = 1, #extra do res[5 + 2 * n + i] = extra[i] end end
  return res
end
`;

/** After the budgets' step: the memo of a reply. */
export const CHARGE_STEP = `
local function remember(res)
  if memo_ttl ~= '0' then save_memos(memo_key, { nonce, memo_of(res) }) end
  return res
end
`;

/** For a call with an idempotency key or a cap only: the record and the cap's day. */
export const RECORD_STEPS = `
-- the idempotency record while it lives (runCharge's live), or nil
local live
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
  expire_after(idem_key, e, now)
  -- a new record joins the credential's index (scripts/reset.ts), which lives as long as its newest record
  if not live and index_key then
    redis.call('SADD', index_key, idem_key)
    expire_after(index_key, e, now)
  end
end
`;

/** The day a cap charge counts in (after `day_of`). */
export const TODAY = `
-- the day a cap charge counts in, and when it ends: the request's (dayOf on the host), or by Redis's clock
local function today()
  if clock == 'r' then return day_of(now, tonumber(day_offset)) end
  return tonumber(day_arg), tonumber(day_end)
end
`;
