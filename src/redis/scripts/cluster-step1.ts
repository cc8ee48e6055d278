/**
 * Redis Cluster, step 1 of a send or schedule (the credential's slot): `CHARGE` up to the dispatch
 * cap, which it does not touch: the same order, KEYS/ARGV (`chargeCall`) and replies, but where
 * `CHARGE` takes the cap it picks the member the cap charge will use and answers `p` (proceed to
 * step 2, cluster-step2.ts).
 */
import type { ChargeOutcome } from "../../store.js";
import { chargeSource, outcomeBase, outcomeOf } from "./charge.js";
import { parts, text, type Script } from "./script.js";

/** Step 1's cap step: hand the cap charge over to step 2. */
const TAKE_CAP = `
-- Redis Cluster, step 1 of 2: the dispatch cap lives in the newsletter's slot, where step 2 takes it.
-- Here: pick the member the cap charge will use and hand it over. A key that already carries a member
-- hands that one over, and step 2 answers a replay when it is still counted.
local function take_cap()
  local day, reset_at = today()
  local day_text = num(day)
  if live and live.m then
    -- another call uses the key's member now: a call that created the record and whose step 2 is
    -- refused must not delete it (this one's step 2 may count the member: CLUSTER_UNDO reads 'u')
    redis.call('HSET', idem_key, 'u', '1')
    return remember(reply('p', '1', live.m, { live.d or '', '0', day_text, num(reset_at), live.c or '' }))
  end
  local fresh = '0'
  if idem_key then
    -- written before the cap is known: a key whose member step 2 does not count is a key that does
    -- not count; a fresh record step 2 refuses is deleted again by the store. 'c' names the cap.
    if not live then fresh = '1' end
    record(now + key_ttl, day_text, new_member)
    redis.call('HSET', idem_key, 'c', cap_name)
  end
  return remember(reply('p', live and '1' or '0', new_member, { '', fresh, day_text, num(reset_at), '' }))
end
`;

/**
 * KEYS and ARGV as `CHARGE` (`chargeCall` with `step2Member`), but no cap key, ARGV 13 is the cap's
 * store key (recorded on the idempotency record) and ARGV 14 the member a new cap charge will use.
 * Reply as `CHARGE`, plus kind p (proceed to step 2: a = replay 1|0, b = member, then after the
 * windows: the day the key's member was counted on ('' = a new member), fresh (1 = this call created
 * the idempotency record), day, day end, the cap the key's member was counted toward ('' = this one)).
 */
export const CLUSTER_STEP1: Script = {
  source: chargeSource("local cap_name, new_member = ARGV[13], ARGV[14]\n", TAKE_CAP),
  sha: "8e740f31f1558f9c5a36a0cbc887e817396357b6",
};

/** Step 1 answered `p`: what step 2 needs. */
export interface Proceed {
  readonly kind: "proceed";
  /** The windows as charged, with `now` when Redis's clock decided. */
  readonly base: ReturnType<typeof outcomeBase>;
  /** The idempotency record was live (its key was used before). */
  readonly replay: boolean;
  /** The key's member, or the new member of this cap charge. */
  readonly member: string;
  /** The day the key's member was counted on ('' = a new member). */
  readonly countedOn: string;
  /** This call created the idempotency record. */
  readonly fresh: boolean;
  /** The day (as text) and its end (ms), by the deciding clock. */
  readonly day: string;
  readonly resetAt: number;
  /** The cap the key's member was counted toward ('' = this one). */
  readonly countedCap: string;
}

/**
 * Decodes step 1's reply: the outcome when step 1 decided (any kind but p), else what step 2 needs.
 *
 * @param budgets - how many budgets the call charged.
 */
export function decodeStep1(reply: unknown, budgets: number): ChargeOutcome | Proceed {
  const first = parts(reply, "charge");
  if (text(first[0]) !== "p") return outcomeOf(first);
  const [, , now, replay, member] = first;
  const [countedOn, fresh, day, resetAt, countedCap] = first.slice(5 + 2 * budgets);
  return {
    kind: "proceed",
    base: outcomeBase(now, first.slice(5, 5 + 2 * budgets)),
    replay: text(replay) === "1",
    member: text(member)!,
    countedOn: text(countedOn)!,
    fresh: text(fresh) === "1",
    day: text(day)!,
    resetAt: Number(resetAt),
    countedCap: text(countedCap)!,
  };
}
