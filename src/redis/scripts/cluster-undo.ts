/**
 * Redis Cluster: a fresh idempotency record written by step 1 whose cap step 2 refused is deleted,
 * as if it had never been written (only an allowed write records its key, as in `runCharge`).
 */
import type { Script, ScriptCall } from "./script.js";

/** KEYS: 1 the record. ARGV: 1 the member step 1 wrote. Reply: 1 when deleted (the store does not read it). */
export const CLUSTER_UNDO: Script = {
  source: `-- KEYS and ARGV, named (undoCall in scripts/cluster-undo.ts builds them)
local record, member = KEYS[1], ARGV[1]

if redis.call('HGET', record, 'm') == member then return redis.call('DEL', record) end
return 0
`,
  sha: "0063fce7899d39308357f88966c38be9cd2ec23a",
};

/** Encodes a `CLUSTER_UNDO` call for the record (as Redis names it) and the member step 1 wrote on it. */
export function undoCall(record: string, member: string): ScriptCall {
  return { keys: [record], args: [member] };
}
