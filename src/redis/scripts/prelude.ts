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
  -- %d for whole numbers (every time and count of an integer clock) is three times cheaper than %.17g;
  -- x % 1 is a VM step where math.floor is a call (NaN and the infinities fail it, as they fail floor)
  if x % 1 == 0 and x > -1e15 and x < 1e15 then return string.format('%d', x) end
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

/** Redis's time in whole ms (after `REDIS_TIME`): the deciding clock with `clock: "redis"`; computed only there. */
export const REDIS_MS = "tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)";

/**
 * `rt` (Redis's time, see `REDIS_TIME`) and `now`, the deciding clock: the host's (`clock == 'h'`,
 * `now_arg` ms) or Redis's (`'r'`, in whole ms). Needs the locals `clock` and `now_arg`.
 */
export const NOW = `${NUM}${REDIS_TIME}local now = clock == 'r' and ${REDIS_MS} or tonumber(now_arg)
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
 * readWindow's rule, inline (no function: Redis runs a script's whole chunk on every call, and each
 * function is one more closure built per call): from `r` (a window's `HMGET s c w`), `win` (the
 * budget's window, ms) and `now`, the locals `count`, `reset` and `start` of its open window
 * (`0, 0, nil` when none is open). `READ` and the charge steps (charge-steps.ts) run this text.
 */
export const OPEN_WINDOW = `-- mirrors readWindow (src/charge.ts): a window is open until start + window (fixed windows, DESIGN §4),
-- and no longer than start + the size it was last charged with ('w'); a window stamped after now (the
-- host clock stepped back) is read as starting now, so its reset is never further than one window
local s, c, w = tonumber(r[1]), tonumber(r[2]), tonumber(r[3])
local count, reset, start = 0, 0, nil
if s ~= nil and c ~= nil and now < s + win and (w == nil or now < s + w) then count, reset, start = c, math.min(s, now) + win, s end`;
