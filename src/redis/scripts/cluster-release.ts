/**
 * Redis Cluster: uncount a dispatch charge (the newsletter's slot). As `runRelease` (src/charge.ts)
 * but for the record, which lives in the credential's slot: the member leaves its day's set whatever
 * the day, so the key that carries it counts again (step 2 finds it no longer counted).
 */
import type { ReleaseTicket } from "../../types.js";
import { asideKey, capDayKey, capSetKey } from "../key-layout.js";
import { isOne, type Script, type ScriptCall } from "./script.js";

/**
 * KEYS: 1 the day's set, 2 the latest-day marker, 3 the day's members a reset moved aside.
 * ARGV: 1 member, 2 day. Reply: 1 when the member was counted in the cap's latest day, else 0.
 */
export const CLUSTER_RELEASE: Script = {
  source: `-- KEYS and ARGV, named (clusterReleaseCall in scripts/cluster-release.ts builds them)
local set, latest_key, aside = KEYS[1], KEYS[2], KEYS[3]
local member, day = ARGV[1], ARGV[2]

local removed = redis.call('SREM', set, member)
-- a member a reset moved aside (scripts/reset.ts) is uncounted already; released, its key counts again
redis.call('SREM', aside, member)
local latest = redis.call('GET', latest_key)
if latest and tonumber(latest) ~= tonumber(day) then return 0 end
return removed
`,
  sha: "599484e03fa718c9408634ac96a4480694a30a80",
};

/** Encodes a `CLUSTER_RELEASE` call; `key` names a store key in Redis (in the newsletter's slot). */
export function clusterReleaseCall(ticket: ReleaseTicket, key: (storeKey: string) => string): ScriptCall {
  const set = capSetKey(ticket.key, ticket.day);
  return { keys: [key(set), key(capDayKey(ticket.key)), key(asideKey(set))], args: [ticket.member, String(ticket.day)] };
}

/** Decodes a `CLUSTER_RELEASE` reply: the charge was still counted. */
export const decodeClusterRelease: (reply: unknown) => boolean = isOne;
