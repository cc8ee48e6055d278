/**
 * A charge on Redis Cluster (docs/redis.md, "The protocol of a send or schedule"). A request whose
 * keys all sit in the credential's slot is one `CHARGE` (`CHARGE_PLAIN` with neither idempotency key
 * nor cap), as on a single primary; a send or schedule takes the credential's slot (step 1: budgets,
 * idempotency) and then the newsletter's (step 2: the dispatch cap).
 */
import type { ChargeOutcome, ChargeRequest } from "../store.js";
import type { Link } from "./client.js";
import { capSlotTag, credentialTag, EXPIRY_SLACK_MS, indexKey } from "./key-layout.js";
import { CHARGE_TIMED, chargeCall, decodeCharge, FIRST_ARG_TIMED, lateCharge, type ChargeCallInput } from "./scripts/charge.js";
import { loneCharge } from "./scripts/charge-plain.js";
import { CLUSTER_COUNTED, countedCall, decodeCounted } from "./scripts/cluster-counted.js";
import { CLUSTER_STEP1, decodeStep1, type Proceed } from "./scripts/cluster-step1.js";
import { CLUSTER_STEP2, decodeStep2, step2Call } from "./scripts/cluster-step2.js";
import { CLUSTER_UNDO, undoCall } from "./scripts/cluster-undo.js";
import { CLUSTER_RENEW, renewCall } from "./scripts/cluster-renew.js";

/** What the cluster path needs of its store. */
export interface ClusterContext {
  readonly link: Link;
  /** Random per store: with the nonce, names this call's cap member. */
  readonly instance: string;
  /** A store key in Redis, under a hash tag. */
  readonly key: (storeKey: string, tag: string) => string;
}

/** One charge call: the request, and what the store set for this call (clock, nonce, memo). */
export type ClusterCall = Pick<ChargeCallInput, "clock" | "nonce" | "memoTtlMs" | "memo"> & {
  /** The outcome of a cap charge Redis made after the caller was answered that the store gave up (see `Link.run`). */
  readonly late?: (outcome: ChargeOutcome) => void;
};

/**
 * Charges one request on Redis Cluster: one round trip, or two for a dispatch cap (three when the
 * key counted toward another newsletter's cap).
 */
export async function chargeOnCluster(ctx: ClusterContext, request: ChargeRequest, call: ClusterCall): Promise<ChargeOutcome> {
  const { budgets } = request;
  // a refused request touches its budgets only: leave the other keys out of its slot
  const idempotency = request.refused ? undefined : request.idempotency;
  const cap = request.refused ? undefined : request.cap;
  const tag = credentialTag([...budgets.map((b) => b.key), ...(idempotency ? [idempotency.key] : [])]);
  // a cap in the credential's slot (the test-send cap) is charged in the same script; another (a
  // newsletter's dispatch cap) takes a second step in its own slot
  const capTag = cap !== undefined ? capSlotTag(cap.key) : tag;
  const twoSteps = cap !== undefined && capTag !== tag;
  const member = `${ctx.instance}.${call.nonce}`;
  const key = (storeKey: string) => ctx.key(storeKey, tag);
  const input: ChargeCallInput = { ...call, now: request.now, refused: request.refused, budgets, idempotency, cap, step2Member: twoSteps ? member : undefined, key };
  if (!twoSteps) {
    const { script, call: lone, timed } = loneCharge(input);
    return decodeCharge(await ctx.link.run(script, "charge", lone.keys, lone.args, timed, 1, lateCharge(call.late)));
  }
  const { keys, args } = chargeCall(input);

  const first = decodeStep1(await ctx.link.run(CLUSTER_STEP1, "charge (step 1: budgets)", keys, args, CHARGE_TIMED), budgets.length);
  if (first.kind !== "proceed") return first;
  return takeDispatchCap(ctx, { request, call, capTag, tag, first, member });
}

/** Steps 2 (and the other cap's check) of a send or schedule, after step 1 answered proceed. */
async function takeDispatchCap(
  ctx: ClusterContext,
  at: { request: ChargeRequest; call: ClusterCall; capTag: string; tag: string; first: Proceed; member: string },
): Promise<ChargeOutcome> {
  const { request, call, capTag, first } = at;
  const idempotency = request.idempotency;
  const cap = request.cap!;
  const { base } = first;
  let countedOn = first.countedOn;
  if (countedOn !== "" && first.countedCap !== "" && first.countedCap !== cap.key) {
    // the key counted toward another newsletter's cap (the same request sent to two newsletters):
    // still counted there, it is a replay; otherwise it counts here. The one case of three round trips.
    const other = countedCall(ctx.key(first.countedCap, capSlotTag(first.countedCap)), first.member, countedOn, first.day);
    if (decodeCounted(await ctx.link.run(CLUSTER_COUNTED, "charge (the key's other cap)", other.keys, other.args))) return { ...base, kind: "charged", replay: true };
    countedOn = "";
  }
  // the member added to the set: unique per cap charge; with an Idempotency-Key it starts with the
  // key's own member, so that step 2 finds whether the key still counts
  const added = idempotency === undefined ? first.member : `${first.member}#${at.member}`;
  const { keys, args } = step2Call({
    memo: ctx.key(call.memo, capTag),
    cap: ctx.key(cap.key, capTag),
    nonce: call.nonce,
    memoTtlMs: call.memoTtlMs,
    member: added,
    keyMember: idempotency === undefined ? undefined : first.member,
    countedOn,
    day: first.day,
    limit: cap.limit,
    resetAt: first.resetAt,
    decidedAt: base.now ?? request.now,
  });
  // step 2 counted after the store gave up (its reply read too late): the outcome it would have been
  const late = call.late;
  const lateStep2 = late && ((reply: unknown) => void (decodeStep2(reply).kind === "counted" && late({ ...base, kind: "charged", replay: false, member: added })));
  const second = decodeStep2(await ctx.link.run(CLUSTER_STEP2, "charge (step 2: dispatch cap)", keys, args, FIRST_ARG_TIMED, 1, lateStep2));
  if (second.kind === "cap_reached") {
    // only an allowed write records its key: delete the record step 1 made (not awaited: a third
    // command, sent on the credential node's connection before any later command of this store)
    if (first.fresh && idempotency !== undefined) {
      const undo = undoCall(ctx.key(idempotency.key, at.tag), first.member);
      void ctx.link.run(CLUSTER_UNDO, "undo", undo.keys, undo.args).catch(() => {});
    }
    return { ...base, kind: "cap_reached", count: second.count };
  }
  if (second.kind === "replay") return { ...base, kind: "charged", replay: true };
  // counted now: not a replay, even with a live key (its charge was released; the retry runs again),
  // and that key is recorded afresh, for 24 h from this use: awaited (a third round trip, on this
  // rare path only), so that a retry sent after this answer finds it; a failure leaves the record
  // as it was (its first use's 24 h), as a lost undo does
  if (!first.fresh && idempotency !== undefined) {
    const decidedAt = base.now ?? request.now;
    const renew = renewCall(ctx.key(idempotency.key, at.tag), idempotency.scope === undefined ? undefined : ctx.key(indexKey(idempotency.scope), at.tag), first.member, decidedAt + idempotency.ttlMs, idempotency.ttlMs + EXPIRY_SLACK_MS);
    await ctx.link.run(CLUSTER_RENEW, "renew", renew.keys, renew.args).catch(() => {});
  }
  return { ...base, kind: "charged", replay: false, member: added };
}
