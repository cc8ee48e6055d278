/**
 * Redis Cluster: a released key whose retry step 2 counted again is recorded afresh (DESIGN §7, as
 * `runCharge` records it): its record lives 24 h from this use, and the credential's index of records
 * at least as long. Step 1 cannot do it for such a key (it hands the key's member over before step 2
 * knows whether it still counts), so the store sends this after step 2, as it sends the undo after a
 * refusal (found by a Redis drill: 25 h after the first use, the retry of a send that counted again
 * at 2 h was sent and counted again on a cluster, and replayed on a single primary).
 */
import type { Script, ScriptCall } from "./script.js";

/**
 * KEYS: 1 the record, [2 the credential's index of records, when it has one]. ARGV: 1 the key's member (the record is
 * renewed only while it still carries it), 2 its new expiry in the deciding clock, 3 its time to
 * live in ms (with the expiry slack). Reply: 1 when renewed (the store does not read it).
 */
export const CLUSTER_RENEW: Script = {
  source: `-- KEYS and ARGV, named (renewCall in scripts/cluster-renew.ts builds them)
local record, index = KEYS[1], KEYS[2]
local member, expires, ttl = ARGV[1], ARGV[2], ARGV[3]

if redis.call('HGET', record, 'm') ~= member then return 0 end
redis.call('HSET', record, 'e', expires)
redis.call('PEXPIRE', record, ttl)
-- the record's entry in the index moves to its new end; the index lives as long as its newest
-- record: lengthened, never shortened
if index then
  redis.call('ZADD', index, expires, record)
  redis.call('PEXPIRE', index, ttl, 'GT')
end
return 1
`,
  sha: "fe069f1404a5092750507e419848f27a181d4c3b",
};

/** Encodes a `CLUSTER_RENEW` call: the record and index (as Redis names them), the key's member, the new expiry and its time to live. */
export function renewCall(record: string, index: string | undefined, member: string, expiresAt: number, ttlMs: number): ScriptCall {
  return { keys: index === undefined ? [record] : [record, index], args: [member, String(expiresAt), String(ttlMs)] };
}
