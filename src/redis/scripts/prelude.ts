/**
 * Lua shared by the scripts, each piece written once and composed into the scripts' sources (Redis
 * runs one string per script, no modules). A piece that mirrors TypeScript names it; the
 * differential tests (Redis store against `MemoryStore`) hold the two together.
 *
 * Numbers cross the wire as strings printed with `%.17g`, which round-trips every double exactly,
 * so that windows and day ends agree with the in-memory store to the millisecond (and below).
 */

/** `num(x)`: a number as the scripts write it, in keys and replies. */
export const NUM = `
local function num(x)
  -- %d for whole numbers (every time and count of an integer clock) is three times cheaper than %.17g
  if x == math.floor(x) and x > -1e15 and x < 1e15 then return string.format('%d', x) end
  return string.format('%.17g', x)
end
`;

/**
 * `rt`: Redis's time (TIME) in ms, to the microsecond, read on every call (deadlines are checked
 * against it); `tm`, Redis's reply to TIME. Code, not a function: Redis runs a script's whole chunk
 * on every call, and a function is one more closure built per call.
 */
export const REDIS_TIME = `
local tm = redis.call('TIME')
local rt = tonumber(tm[1]) * 1000 + tonumber(tm[2]) / 1000
`;

/** `redis_ms`: Redis's time in whole ms, the deciding clock with `clock: "redis"` (after `REDIS_TIME`). */
export const REDIS_MS = `local redis_ms = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
`;

/**
 * `rt` (Redis's time, see `REDIS_TIME`) and `now`, the deciding clock: the host's (`clock == 'h'`,
 * `now_arg` ms) or Redis's (`'r'`, in whole ms). Needs the locals `clock` and `now_arg`.
 */
export const NOW = `${NUM}${REDIS_TIME}${REDIS_MS}local now = clock == 'r' and redis_ms or tonumber(now_arg)
`;

/** `day_of(now, offset)`: the day a cap charge counts in, and when it ends. */
export const DAY_OF = `
-- mirrors dayOf (src/calendar.ts): days start at the configured offset from midnight UTC
local function day_of(now, offset)
  local day = math.floor((now + offset) / 86400000)
  return day, (day + 1) * 86400000 - offset
end
`;

/**
 * `read_window(key, win, now)`: a budget's open window as `count, resetAt, start, size`
 * (`0, 0, nil, size` when none is open); `size` is the stored size, as text.
 */
export const READ_WINDOW = `
-- mirrors readWindow (src/charge.ts): a window is open until start + window (fixed windows, DESIGN §4),
-- and no longer than start + the size it was last charged with ('w'); a window stamped after now (the
-- host clock stepped back) is read as starting now, so its reset is never further than one window
local function read_window(key, win, now)
  local r = redis.call('HMGET', key, 's', 'c', 'w')
  local s, c, w = tonumber(r[1]), tonumber(r[2]), tonumber(r[3])
  if s == nil or c == nil or now >= s + win or (w ~= nil and now >= s + w) then return 0, 0, nil, r[3] end
  return c, math.min(s, now) + win, s, r[3]
end
`;
