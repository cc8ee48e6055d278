/**
 * The steps of the charge order over the call's state: each of `runCharge`'s steps (src/charge.ts)
 * and the helpers they share. Composed into `CHARGE` and `CLUSTER_STEP1` by `chargeSource`
 * (charge.ts), after the header that names KEYS and ARGV (`n`, `budget(i)`, `idem_key`, …) and the
 * prelude (`num`, `rt`, `now`, `day_of`). The budget steps (`budgetSteps`) are code run in place over
 * a budget accessor, so that `CHARGE_PLAIN` and each plain charge of `CHARGE_BATCH` run the very same
 * text (in the layout of reply each script answers with: `ReplyLayout`).
 *
 * Redis runs a script's whole chunk on every call, so every `local function` is a new closure per
 * call, each local it captures one more upvalue made and closed per call, each table one more object
 * (and each time it grows past a power of two, one more rehash): the steps are in pieces, each defined
 * just before the order first needs it, so that a call which returns early (a deadline, a retry, a
 * spent budget, a request with neither idempotency key nor cap) builds none of the later ones; the
 * budget steps are one function (`budget_steps`) that takes what it reads as parameters, not one per
 * step and helper, and none in the batch's plain charges, which run them in place; a budget's key,
 * window and limit are read from KEYS/ARGV by `budget(i)`, not copied into tables; the reply is made
 * at the size two budgets fill; and each text is converted to a number once, by arithmetic when the
 * store or Redis wrote it (`tonumber` runs strtod twice, prelude.ts). Measured with callgrind
 * (instructions per EVALSHA, `npm run bench:redis:instructions`), not guessed.
 */
import { INDEX_GRACE_MS } from "../key-layout.js";
import { OPEN_WINDOW } from "./prelude.js";
import { indented } from "./script.js";

/**
 * The test of a reply's window part `x` that goes back as text (`num(x)`) rather than as a Redis
 * integer: a fraction, or a whole number too large for one. The budget steps answer by it, and
 * `replay_plain` answers a plain memo's doubles again by it, so that a resend's reply is the first's.
 */
const NOT_AN_INTEGER = "x % 1 ~= 0 or x <= -1e14 or x >= 1e14";

/**
 * Where a reply's parts go. `full` (`CHARGE`, `CLUSTER_STEP1`): { kind, Redis time (µs), now ('' with
 * the host clock), a, b, count_1, resetAt_1, ... }, of kind s (budget_spent) or c (charged, a = '0':
 * not a replay, b = '': no member), which `CHARGE`'s later steps may turn into another. `plain`
 * (`CHARGE_PLAIN`, the batch's plain charges): { kind, Redis time (µs), now, count_1, resetAt_1, ... },
 * of kind S (budget_spent) or C (charged, not a replay, no member): the same answer without the two
 * parts a plain charge leaves empty (each part of a reply is ~800 instructions for Redis to convert).
 */
export type ReplyLayout = "full" | "plain";

/**
 * runCharge's two budget steps (src/charge.ts) and the reply they make, as code run in place (no
 * function of its own: each is one more closure built per call), over the budget accessor named
 * `budget` (`budget(i)`: key, window as text, limit as text) and the locals `n` and `now`. It assigns
 * the caller's locals `res` (the reply, laid out as `layout` says) and `spent`. `CHARGE_BATCH` runs it
 * in each of its plain charges (`plain`), `CHARGE_PLAIN` (`plain`), `CHARGE` and `CLUSTER_STEP1`
 * (`full`) in `budget_steps()`.
 */
export function budgetSteps(budget: string, layout: ReplyLayout = "full"): string {
  // budget i's window is res[w + 2i] (count) and res[w + 1 + 2i] (resetAt)
  const w = layout === "plain" ? 2 : 4;
  const head = layout === "plain" ? "'S', rt_us, clock == 'r' and num(now) or ''" : "'s', rt_us, clock == 'r' and num(now) or '', '', ''";
  const charged = layout === "plain" ? "res[1] = 'C'" : "res[1], res[4] = 'c', '0'";
  return `-- mirrors runCharge's budget steps (src/charge.ts): when a budget is spent nothing is charged (DESIGN §2),
-- else every budget is. res: { kind, Redis time (µs), now ('' with the host clock), ${layout === "plain" ? "" : "a, b, "}count_1, resetAt_1, ... }
-- res and at are made as large as two budgets fill them (a table that grows is rehashed at each power of two)
res, spent = { ${head}, false, false, false, false }, false
local at = { false, false, false, false } -- budget i's stored start and size, at 2i - 1 and 2i
for i = 1, n do
  local key, win_text, limit = ${budget}(i)
  local win = win_text + 0
  local r = redis.call('HMGET', key, 's', 'c', 'w')
${indented(OPEN_WINDOW)}
  res[${w} + 2 * i], res[${w + 1} + 2 * i], at[2 * i - 1], at[2 * i] = count, reset, start, r[3]
  if count >= limit + 0 then spent = true end
end
for i = ${w + 2} + 2 * n, ${w + 5} do res[i] = nil end -- fewer than two budgets: the reply ends after the last
if not spent then
  ${charged}
  for i = 1, n do
    local key, win_text = ${budget}(i)
    local win, count, reset = win_text + 0, res[${w} + 2 * i], res[${w + 1} + 2 * i]
    if count == 0 then
      -- a window starts at its first charge, and its key expires with it (plus the slack)
      count, reset = 1, now + win
      redis.call('HSET', key, 's', num(now), 'c', '1', 'w', win_text)
      redis.call('PEXPIRE', key, math.max(1, math.ceil(reset - now)) + slack)
    else
      -- an open window keeps its start, however far ahead, and its expiry
      local start, stored = at[2 * i - 1], at[2 * i] == win_text and win or (tonumber(at[2 * i]) or win)
      count, reset = count + 1, start > now + win and now + win or (now < start and now or start) + math.max(stored, win)
      redis.call('HSET', key, 'c', num(count))
      if stored < win then
        -- a plan grew the window (a smaller size keeps it: readWindow): it ends at start + the new size;
        -- its key lives a window from now at least, start being the opener's clock and now this host's
        -- (a host ahead cut it short by their skew; found by a Redis drill)
        redis.call('HSET', key, 'w', win_text)
        redis.call('PEXPIRE', key, math.max(1, math.ceil(math.max(win, start + win - now))) + slack)
      end
    end
    res[${w} + 2 * i], res[${w + 1} + 2 * i] = count, reset
  end
end
-- a whole number goes back as a Redis integer (nothing to format), any other as text
for i = ${w + 2}, ${w + 1} + 2 * n do
  local x = res[i]
  if ${NOT_AN_INTEGER} then res[i] = num(x) end
end`;
}

/**
 * `save_memos(hash, fields)`: memos written to one memo hash at once (`MEMO`'s; `CHARGE_BATCH` writes
 * its plain charges' memos with it and needs nothing else of `MEMO`).
 */
export const SAVE_MEMOS = `
-- memos of one hash (nonce, memo, nonce, memo, ...); the hash expires as a whole
local function save_memos(hash, fields)
  redis.call('HSET', hash, unpack(fields))
  redis.call('PEXPIRE', hash, memo_ttl, 'NX')
end
`;

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
${SAVE_MEMOS}
-- a remembered reply, answered again at this Redis time
local function replay(memo)
  local res = cmsgpack.unpack(memo)
  res[2] = rt_us
  return res
end
`;

/**
 * A plain charge's memo (`CHARGE_PLAIN`, the batch's plain path): its reply's kind, `now` and windows
 * (the `plain` layout) as doubles with `struct.pack`. Packing five values by a fixed format is ~3 000
 * instructions where MessagePack of the whole reply table (walked to see that it is an array) was
 * ~8 000 (callgrind). Run in place after the budget steps (`res`, `n`, `now`); it sets the local
 * `memo`. A charge's resend is the same script with the same nonce, so a plain memo is only ever read
 * back by {@link REPLAY_PLAIN}.
 */
export const PLAIN_MEMO = `-- a plain charge's memo: kind, now, then count_i and resetAt_i, as doubles (a text window part is a number's text)
local memo = struct.pack(n == 2 and '<c1ddddd' or '<c1d' .. string.rep('dd', n), res[1], now, unpack(res, 4, 3 + 2 * n))`;

/**
 * `replay_plain(memo)`: a plain charge's reply again, from its memo ({@link PLAIN_MEMO}), at this
 * Redis time: as the budget steps made it (whole numbers as integers, any other as text). A memo of
 * another form (MessagePack, a full charge's) is replayed as it is.
 */
export const REPLAY_PLAIN = `local function replay_plain(memo)
  local kind = string.sub(memo, 1, 1)
  if kind ~= 'S' and kind ~= 'C' then
    local res = cmsgpack.unpack(memo)
    res[2] = rt_us
    return res
  end
  -- kind, now, count_1, resetAt_1, ..., and struct.unpack's next position last
  local v = { struct.unpack('<c1' .. string.rep('d', (#memo - 1) / 8), memo) }
  local res = { kind, rt_us, clock == 'r' and num(v[2]) or '' }
  for i = 3, #v - 1 do
    local x = v[i]
    if ${NOT_AN_INTEGER} then res[1 + i] = num(x) else res[1 + i] = x end
  end
  return res
end`;

/**
 * The budget steps as one function, `budget_steps(budget, n, now, rt_us, clock, slack, num)`, which
 * answers `res, spent` (the steps inside it are run in place), with the locals `res` and `spent` it
 * is answered into: `CHARGE`'s (the `full` layout) and `CHARGE_PLAIN`'s (`plain`). Everything it
 * reads is a parameter: a local of the chunk that a function reads is one more upvalue object made and
 * closed on every call (with the nine it read, `CHARGE_PLAIN` ran ~2 500 instructions more per call;
 * callgrind).
 */
export function budgetStepsFunction(layout: ReplyLayout): string {
  return `
-- runCharge's budget steps over its inputs, answering this call's reply as they made it and whether a budget was spent
local function budget_steps(budget, n, now, rt_us, clock, slack, num)
  local res, spent
${indented(budgetSteps("budget", layout))}
  return res, spent
end
local res, spent
`;
}

/** {@link budgetStepsFunction} for `CHARGE` and `CLUSTER_STEP1`. */
export const BUDGET_STEPS = budgetStepsFunction("full");

/** `CHARGE`'s own, after the budget steps: its replies of every kind. */
export const REPLY = `
-- the reply: kind, a and b over the budget steps' own, then extra...
local function reply(kind, a, b, extra)
  res[1], res[4], res[5] = kind, a, b
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
-- a key lives until what it holds ends (a relative expiry, in the deciding clock), plus the slack;
-- with only_longer, an expiry it has already is lengthened, never shortened (a key without one keeps none)
local function expire_after(key, ends, now, only_longer)
  local ms = math.max(1, math.ceil(ends - now)) + slack
  if only_longer then redis.call('PEXPIRE', key, ms, 'GT') else redis.call('PEXPIRE', key, ms) end
end

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
  -- the record joins the credential's index (scripts/reset.ts) by when it ends, and the entries of
  -- records that ended an hour ago and more leave it (it only grew: every key a credential ever used);
  -- the index lives as long as its newest record: one recorded afresh lengthens it, never shortens it
  if index_key then
    redis.call('ZADD', index_key, num(e), idem_key)
    redis.call('ZREMRANGEBYSCORE', index_key, '-inf', '(' .. num(now - ${INDEX_GRACE_MS}))
    expire_after(index_key, e, now, live)
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
