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
 * against it); `rt_us`, the same time in whole µs, as replies carry it (a Lua number goes back as a
 * Redis integer: nothing formatted, where `%.17g` of `rt` was ~5 500 instructions a reply); `tm`,
 * Redis's reply to TIME. Code, not a function: Redis runs a script's whole chunk on every call, and a
 * function is one more closure built per call.
 *
 * A text that Redis or the store wrote (TIME's reply, ARGV) becomes a number by arithmetic (`x + 0`,
 * `x * 1000`): Lua converts it with one strtod, where `tonumber` (Lua 5.1's luaB_tonumber: lua_isnumber,
 * then lua_tonumber) converts it twice, at ~500 instructions a conversion. The value is the same;
 * only a text that is no number would differ (an error instead of nil), and these are always
 * numbers. What is read from keys keeps `tonumber` (nil for a missing or unreadable field).
 */
export const REDIS_TIME = `
local tm = redis.call('TIME')
local rt_us = tm[1] * 1000000 + tm[2]
local rt = rt_us / 1000
`;

/** Redis's time in whole ms (after `REDIS_TIME`): the deciding clock with `clock: "redis"`; computed only there. */
export const REDIS_MS = "tm[1] * 1000 + math.floor(tm[2] / 1000)";

/**
 * `now`, the deciding clock: the host's (`clock == 'h'`, `now_arg` ms) or Redis's (`'r'`, in whole
 * ms). Needs the locals `clock` and `now_arg`, after `REDIS_TIME` (`CHARGE_PLAIN` runs it after its
 * deadline and memo, `NOW` at once).
 */
export const DECIDING_NOW = `local now = clock == 'r' and ${REDIS_MS} or now_arg + 0
`;

/** `num`, `rt` (Redis's time, see `REDIS_TIME`) and `now`, the deciding clock (`DECIDING_NOW`). */
export const NOW = `${NUM}${REDIS_TIME}${DECIDING_NOW}`;

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
 * function is one more closure built per call): from `r` (a window's `HMGET s c w`), `win` and
 * `win_text` (the budget's window, ms, as a number and as the text a window records) and `now`, the
 * locals `count`, `reset` and `start` of its open window (`0, 0, nil` when none is open). `READ` and
 * the charge steps (charge-steps.ts) run this text.
 */
export const OPEN_WINDOW = `-- mirrors readWindow (src/charge.ts): a window is open until start + the size it was last charged
-- with ('w'; nil when it is this window's own text, which is then not converted), whatever size it is
-- read with (fixed windows, DESIGN §4; another plan's smaller size does not end it early), and its
-- reset is then, unless a charge grows it (charge-steps.ts). Stamped after now, it keeps its start (see
-- security.md); its reset reads as readWindow's: a window away at most (the size read with, past it)
local s, c, w = tonumber(r[1]), tonumber(r[2]), r[3] ~= win_text and tonumber(r[3]) or nil
local count, reset, start = 0, 0, nil
if s ~= nil and c ~= nil and now < s + (w or win) then count, reset, start = c, s > now + win and now + win or (now < s and now or s) + (w or win), s end`;
