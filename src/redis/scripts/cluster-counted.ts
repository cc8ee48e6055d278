/**
 * Redis Cluster: whether a key's cap charge is still counted, found by its members in the cap's day
 * sets (a member `<key member>#<call>`). `COUNTED` is the rule, shared with step 2
 * (cluster-step2.ts); `CLUSTER_COUNTED` asks it of another newsletter's cap (a key reused there).
 */
import { isOne, type Script, type ScriptCall } from "./script.js";

/**
 * `counted(base, prefix, handed_on, day)`: a member starting with `prefix` is in a set of the cap
 * `base` on the day the key's member was handed out (`handed_on`, '' when unknown), the day before
 * `day`, `day` or the day after: a key lives 24 h, and a host ahead across midnight may have counted
 * a released key again on its own day (found by a review). The one place the days are chosen.
 */
export const COUNTED = `
local function counted(base, prefix, handed_on, day)
  local n, d0 = #prefix, tonumber(day)
  for _, d in ipairs({ handed_on, tostring(d0 - 1), day, tostring(d0 + 1) }) do
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
 * KEYS: 1 that cap key without the day. ARGV: 1 the key's member followed by '#', 2 the day it was
 * handed out on, 3 the caller's day (`counted` looks around it).
 * Reply: 1 or 0.
 */
export const CLUSTER_COUNTED: Script = {
  source: `-- KEYS and ARGV, named (countedCall in scripts/cluster-counted.ts builds them)
local cap_key, key_prefix, handed_on, day = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
${COUNTED}
if counted(cap_key, key_prefix, handed_on, day) then return 1 end
return 0
`,
  sha: "2e4f04604a140593667dcf3cadfb9ff9ea070595",
};

/** Encodes a `CLUSTER_COUNTED` call: is the key whose member is `member` still counted in the cap `capKey` (see {@link COUNTED})? */
export function countedCall(capKey: string, member: string, countedOn: string, day: string): ScriptCall {
  return { keys: [capKey], args: [`${member}#`, countedOn, day] };
}

/** Decodes a `CLUSTER_COUNTED` reply. */
export const decodeCounted: (reply: unknown) => boolean = isOne;
