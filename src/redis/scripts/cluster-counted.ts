/**
 * Redis Cluster: whether a key's cap charge is still counted, found by its members in the cap's day
 * sets (a member `<key member>#<call>`). `COUNTED` is the rule, shared with step 2
 * (cluster-step2.ts); `CLUSTER_COUNTED` asks it of another newsletter's cap (a key reused there).
 */
import { isOne, type Script, type ScriptCall } from "./script.js";

/** `counted(base, prefix, days)`: a member starting with `prefix` is in a day's set of the cap `base`. */
export const COUNTED = `
local function counted(base, prefix, days)
  local n = #prefix
  for _, d in ipairs(days) do
    if d ~= '' then
      -- the day's set, and the members a reset moved aside (scripts/reset.ts): still charges the key made
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

/**
 * KEYS: 1 that cap key without the day. ARGV: 1 the key's member followed by '#', 2–5 days to look in.
 * Reply: 1 or 0.
 */
export const CLUSTER_COUNTED: Script = {
  source: `-- KEYS and ARGV, named (countedCall in scripts/cluster-counted.ts builds them)
local cap_key, key_prefix = KEYS[1], ARGV[1]
local days = { ARGV[2], ARGV[3], ARGV[4], ARGV[5] }
${COUNTED}
if counted(cap_key, key_prefix, days) then return 1 end
return 0
`,
  sha: "a56e4bfc7e42807fc3a5b7896e173d559ccf614d",
};

/**
 * Encodes a `CLUSTER_COUNTED` call: is the key whose member is `member` still counted in the cap
 * `capKey` on the day it was counted on, or the day before `day`, `day` or the day after (a host
 * ahead across midnight may have counted it again after a release)?
 */
export function countedCall(capKey: string, member: string, countedOn: string, day: string): ScriptCall {
  return { keys: [capKey], args: [`${member}#`, countedOn, String(Number(day) - 1), day, String(Number(day) + 1)] };
}

/** Decodes a `CLUSTER_COUNTED` reply. */
export const decodeCounted: (reply: unknown) => boolean = isOne;
