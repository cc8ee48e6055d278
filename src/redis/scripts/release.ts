/** The release script: uncount one daily-cap charge and let its idempotency key count again. */
import type { ReleaseTicket } from "../../types.js";
import { capDayKey, capSetKey } from "../key-layout.js";
import { NOW } from "./prelude.js";
import { isOne, type Script, type ScriptCall } from "./script.js";

/**
 * KEYS: 1 the day's cap set, 2 the cap key's latest-day marker, 3 [idempotency record].
 * ARGV: 1 clock, 2 now, 3 member, 4 day. Reply: 1 when the member was still counted, else 0.
 */
export const RELEASE: Script = {
  source: `-- KEYS and ARGV, named (releaseCall in scripts/release.ts builds them)
local set, latest_key, record = KEYS[1], KEYS[2], KEYS[3]
local clock, now_arg, member, day = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
${NOW}
-- mirrors runRelease (src/charge.ts); a ticket of a day before the cap's latest day uncounts nothing
local removed = 0
local latest = redis.call('GET', latest_key)
if not latest or tonumber(latest) == tonumber(day) then
  removed = redis.call('SREM', set, member)
end
if record then
  local r = redis.call('HMGET', record, 'e', 'm')
  local e = tonumber(r[1])
  -- DESIGN §7: once released, the key counts again on its next allowed use
  if e and now < e and r[2] == member then redis.call('HDEL', record, 'd', 'm') end
end
return removed
`,
  sha: "8fac89f0e073d794972d2ad83bce770957bbd629",
};

/** Encodes a `RELEASE` call; `key` names a store key in Redis. */
export function releaseCall(ticket: ReleaseTicket, clock: "h" | "r", now: number, key: (storeKey: string) => string): ScriptCall {
  const keys = [key(capSetKey(ticket.key, ticket.day)), key(capDayKey(ticket.key))];
  if (ticket.idempotencyKey !== undefined) keys.push(key(ticket.idempotencyKey));
  return { keys, args: [clock, String(now), ticket.member, String(ticket.day)] };
}

/** Decodes a `RELEASE` reply: the charge was still counted. */
export const decodeRelease: (reply: unknown) => boolean = isOne;
