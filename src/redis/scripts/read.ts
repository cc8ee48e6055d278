/** The read script: budgets' windows without charging, for `GET /rate-limit` (`policy.status`). */
import type { BudgetCharge, WindowReading } from "../../store.js";
import { NOW, OPEN_WINDOW } from "./prelude.js";
import { indented, parts, readings, type Script, type ScriptCall } from "./script.js";

/**
 * KEYS: budget_1..budget_n. ARGV: 1 clock, 2 now, then window_i.
 * Reply: { count_1, resetAt_1, ... } (0, 0 for a budget with no open window). With Redis's clock,
 * each resetAt is moved into the host's clock (host now + time left by Redis's clock), so that the
 * host measures the same seconds left as a decision's headers give.
 */
export const READ: Script = {
  source: `-- KEYS and ARGV, named (readCall in scripts/read.ts builds them)
local clock, now_arg = ARGV[1], ARGV[2]
local win_texts = {}
for i = 1, #KEYS do win_texts[i] = ARGV[2 + i] end
${NOW}
local shift = tonumber(now_arg) - now
local res = {}
for i = 1, #KEYS do
  local r, win_text = redis.call('HMGET', KEYS[i], 's', 'c', 'w'), win_texts[i]
  local win = win_text + 0
${indented(OPEN_WINDOW)}
  if start == nil then
    res[2 * i - 1], res[2 * i] = '0', '0'
  else
    res[2 * i - 1], res[2 * i] = num(count), num(reset + shift)
  end
end
return res
`,
  sha: "3cc4ffba654faa3e511be91dedb51d94c50f2a21",
};

/** Encodes a `READ` call; `key` names a store key in Redis. */
export function readCall(budgets: readonly BudgetCharge[], clock: "h" | "r", now: number, key: (storeKey: string) => string): ScriptCall {
  return { keys: budgets.map((b) => key(b.key)), args: [clock, String(now), ...budgets.map((b) => String(b.windowMs))] };
}

/** Decodes a `READ` reply: one reading per budget. */
export function decodeRead(reply: unknown): WindowReading[] {
  return readings(parts(reply, "read"));
}
