/** The release script: uncount one daily-cap charge and let its idempotency key count again. */
import type { ReleaseTicket } from "../../types.js";
import { capSetKey } from "../key-layout.js";
import { isOne, type Script, type ScriptCall } from "./script.js";

/**
 * KEYS: 1 the day's cap set, 2 [idempotency record].
 * ARGV: 1 member. Reply: 1 when the member was still counted, else 0.
 */
export const RELEASE: Script = {
  source: `-- KEYS and ARGV, named (releaseCall in scripts/release.ts builds them)
local set, record = KEYS[1], KEYS[2]
local member = ARGV[1]

-- mirrors runRelease (src/charge.ts): the member leaves its day's set, whatever day the cap counts now
local removed = redis.call('SREM', set, member)
-- DESIGN §7: once released, the key counts again on its next allowed use; its own charge's record,
-- live or not (runRelease says why)
if record and redis.call('HGET', record, 'm') == member then redis.call('HDEL', record, 'd', 'm') end
return removed
`,
  sha: "223daa9c93e324ebe39d146e5fd5faed24b65186",
};

/** Encodes a `RELEASE` call; `key` names a store key in Redis. */
export function releaseCall(ticket: ReleaseTicket, key: (storeKey: string) => string): ScriptCall {
  const keys = [key(capSetKey(ticket.key, ticket.day))];
  if (ticket.idempotencyKey !== undefined) keys.push(key(ticket.idempotencyKey));
  return { keys, args: [ticket.member] };
}

/** Decodes a `RELEASE` reply: the charge was still counted. */
export const decodeRelease: (reply: unknown) => boolean = isOne;
