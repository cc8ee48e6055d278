/** The release script: uncount one daily-cap charge and let its idempotency key count again. */
import type { ReleaseTicket } from "../../types.js";
import { capSetKey } from "../key-layout.js";
import { NOW } from "./prelude.js";
import { isOne, type Script, type ScriptCall } from "./script.js";

/**
 * KEYS: 1 the day's cap set, 2 [idempotency record].
 * ARGV: 1 clock, 2 now, 3 member. Reply: 1 when the member was still counted, else 0.
 */
export const RELEASE: Script = {
  source: `-- KEYS and ARGV, named (releaseCall in scripts/release.ts builds them)
local set, record = KEYS[1], KEYS[2]
local clock, now_arg, member = ARGV[1], ARGV[2], ARGV[3]
${NOW}
-- mirrors runRelease (src/charge.ts): the member leaves its day's set, whatever day the cap counts now
local removed = redis.call('SREM', set, member)
if record then
  local r = redis.call('HMGET', record, 'e', 'm')
  local e = tonumber(r[1])
  -- DESIGN §7: once released, the key counts again on its next allowed use
  -- its own charge, live or not (runRelease says why)
  if e and r[2] == member then redis.call('HDEL', record, 'd', 'm') end
end
return removed
`,
  sha: "a1b939d7072226e2c23545ebc59c8aa2abf4e54a",
};

/** Encodes a `RELEASE` call; `key` names a store key in Redis. */
export function releaseCall(ticket: ReleaseTicket, clock: "h" | "r", now: number, key: (storeKey: string) => string): ScriptCall {
  const keys = [key(capSetKey(ticket.key, ticket.day))];
  if (ticket.idempotencyKey !== undefined) keys.push(key(ticket.idempotencyKey));
  return { keys, args: [clock, String(now), ticket.member] };
}

/** Decodes a `RELEASE` reply: the charge was still counted. */
export const decodeRelease: (reply: unknown) => boolean = isOne;
