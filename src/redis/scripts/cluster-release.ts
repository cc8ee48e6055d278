/**
 * Redis Cluster: uncount a dispatch charge (the newsletter's slot). As `runRelease` (src/charge.ts)
 * but for the record, which lives in the credential's slot: the member leaves its day's set whatever
 * the day, so the key that carries it counts again (step 2 finds it no longer counted).
 */
import type { ReleaseTicket } from "../../types.js";
import { asideKey, capSetKey } from "../key-layout.js";
import { isOne, type Script, type ScriptCall } from "./script.js";

/**
 * KEYS: 1 the day's set, 2 the day's members a reset moved aside.
 * ARGV: 1 member. Reply: 1 when the member was still counted, else 0.
 */
export const CLUSTER_RELEASE: Script = {
  source: `-- KEYS and ARGV, named (clusterReleaseCall in scripts/cluster-release.ts builds them)
local set, aside = KEYS[1], KEYS[2]
local member = ARGV[1]

local removed = redis.call('SREM', set, member)
-- a member a reset moved aside (scripts/reset.ts) is uncounted already; released, its key counts again
redis.call('SREM', aside, member)
return removed
`,
  sha: "eab22672160ae26900306b61b10cde31a3e161fa",
};

/** Encodes a `CLUSTER_RELEASE` call; `key` names a store key in Redis (in the newsletter's slot). */
export function clusterReleaseCall(ticket: ReleaseTicket, key: (storeKey: string) => string): ScriptCall {
  const set = capSetKey(ticket.key, ticket.day);
  return { keys: [key(set), key(asideKey(set))], args: [ticket.member] };
}

/** Decodes a `CLUSTER_RELEASE` reply: the charge was still counted. */
export const decodeClusterRelease: (reply: unknown) => boolean = isOne;
