/**
 * Redis Cluster: a fresh idempotency record written by step 1 whose cap step 2 refused is deleted,
 * as if it had never been written (only an allowed write records its key, as in `runCharge`),
 * unless another call has used its member since (step 1 marks the record 'u'): that call's step 2
 * may have counted the member, and a record deleted under a counted member lets the key count again
 * (found by a Redis review: a retry racing its first attempt, a release between, and the key counted
 * twice). Kept, the record refuses another body under the key (409) where a single primary would
 * not have one: the safe side.
 */
import type { Script, ScriptCall } from "./script.js";

/** KEYS: 1 the record. ARGV: 1 the member step 1 wrote. Reply: 1 when deleted (the store does not read it). */
export const CLUSTER_UNDO: Script = {
  source: `-- KEYS and ARGV, named (undoCall in scripts/cluster-undo.ts builds them)
local record, member = KEYS[1], ARGV[1]

local r = redis.call('HMGET', record, 'm', 'u')
if r[1] == member and not r[2] then return redis.call('DEL', record) end
return 0
`,
  sha: "831d3ac4b86d68da7c07b6ce0a7fe2a1578e04a7",
};

/** Encodes a `CLUSTER_UNDO` call for the record (as Redis names it) and the member step 1 wrote on it. */
export function undoCall(record: string, member: string): ScriptCall {
  return { keys: [record], args: [member] };
}
