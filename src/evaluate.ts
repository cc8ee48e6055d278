/**
 * The pure way through: plan → charge → decide → render over an immutable immer snapshot of the
 * counters. No clock, no randomness, no I/O: the same inputs give the same decision.
 */
import { runCharge, runRelease } from "./charge.js";
import { chargeRequest } from "./charge-request.js";
import { resolveConfig, type PolicyConfig } from "./config.js";
import type { PolicyOptions } from "./config-types.js";
import { assertCredential, assertNoMisspelt, assertNow, assertRoles, assertUsage } from "./host-input.js";
import { applyLimits } from "./limits.js";
import type { Limits } from "./types.js";
import { plan } from "./plan.js";
import { present } from "./render.js";
import { derivedRequestId, whoCode } from "./request-id.js";
import { readDescriptor } from "./request.js";
import { PolicyConfigError } from "./errors.js";
import { sealed } from "./immer.js";
import { asSnapshotError } from "./snapshot-check.js";
import { SnapshotTx } from "./snapshot-tx.js";
import { usageData, type Usage } from "./snapshot.js";
import type { ChargeOutcome } from "./store.js";
import { subjectKeysOf } from "./store-keys.js";
import type { Credential, Decision, Grants, PolicyRequest, ReleaseTicket, Roles } from "./types.js";


const STATE_FIELDS = ["credential", "roles", "usage", "now", "config", "limits"] as const;

/** Everything `evaluate` reads. */
export interface PolicyState {
  readonly credential: Credential;
  /** The credential owner's current role on each newsletter (spec §5.4: applied on every request). */
  readonly roles: Roles;
  readonly usage: Usage;
  /** Milliseconds since the epoch. */
  readonly now: number;
  /**
   * Default: the spec's numbers. Pass the result of `defineConfig` (compiled once); a plain options
   * object is compiled on first use and remembered by identity, so an object literal written inline
   * in the call is compiled on every call.
   */
  readonly config?: PolicyConfig | PolicyOptions;
  /** The plan's limits (budgets and caps in the config's shape); see `Who.limits`. Default: the config's. */
  readonly limits?: Limits;
}

/**
 * Decides one request, purely: plan → charge → decide → render over an immutable snapshot.
 *
 * @param request - the {@link PolicyRequest} the host built from the HTTP request. Typed, and still
 *   validated at run time: it is untrusted, so any shape (even one the types forbid) is answered, a
 *   malformed one with 400 `invalid_request`, never thrown.
 * @param state - credential, roles, counters, the time, and optional config (default: the spec's numbers).
 * @returns the decision and the next counters; `usage === state.usage` when nothing changed.
 * @throws PolicyConfigError for host mistakes only: invalid config, credential or `now`.
 * @example
 * const { decision, usage } = evaluate(
 *   { method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" },
 *   { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: Date.now() },
 * );
 */
export function evaluate(request: PolicyRequest, state: PolicyState): { decision: Decision; usage: Usage } {
  const config = applyLimits(resolveConfig(state.config), state.limits, "limits");
  assertCredential(state.credential);
  assertRoles(state.roles);
  assertNoMisspelt(state, "state", STATE_FIELDS);
  assertUsage(state.usage);
  assertNow(state.now, "now");
  const { credential, usage, now } = state;
  // the descriptor is read once, into plain values, by the same reader as `check`'s
  const read = readDescriptor(request);
  const planned = plan(config, read, credential, state.roles);
  const tx = new SnapshotTx(usage);
  const keys = subjectKeysOf(credential);
  const who = whoCode(grantsOn(credential, planned.newsletter), credential.account === true);
  const requestId = derivedRequestId(planned.requestId, keys.subject, read, planned.role, who, now, usageData(usage).seq);
  const charge = chargeRequest(planned, keys, config, now, requestId);
  let outcome: ChargeOutcome;
  let next: Usage;
  // the snapshot's records, read and written: no host code runs here, so what is thrown is the snapshot's shape
  try {
    outcome = runCharge(tx, charge);
    next = tx.commit(now);
  } catch (error) {
    throw asSnapshotError(error);
  }
  return { decision: present(planned, charge, outcome, config, now, requestId), usage: next };
}

/** The credential's grants on the plan's newsletter (own entries only, as the plan read them), if any. */
function grantsOn(credential: Credential, newsletter: string | undefined): Grants | undefined {
  if (newsletter === undefined || !Object.hasOwn(credential.newsletters, newsletter)) return undefined;
  const grants = credential.newsletters[newsletter];
  return typeof grants === "object" && grants !== null ? grants : undefined;
}

/**
 * Uncounts a daily-cap charge whose send or schedule then failed downstream (DESIGN §2, §7).
 * Releasing twice, or releasing a decision that charged no cap, changes nothing.
 *
 * @param usage - the current counters.
 * @param decision - the allowed decision that counted toward the cap.
 * @param now - ms since the epoch (checked as a time; a release is the same at any time).
 * @returns the next counters; the same object when nothing was released.
 * @example
 * if (sendFailed) usage = release(usage, decision, Date.now());
 */
export function release(usage: Usage, decision: Pick<Decision, "release">, now: number): Usage {
  assertUsage(usage);
  assertNow(now, "now");
  if (typeof decision !== "object" || decision === null) throw new PolicyConfigError("decision", "must be the decision evaluate answered (an object with its release ticket)");
  const ticket: ReleaseTicket | undefined = decision.release;
  if (ticket !== undefined) assertTicket(ticket);
  try {
    if (ticket === undefined) return sealed(usageData(usage)) as unknown as Usage;
    const tx = new SnapshotTx(usage);
    runRelease(tx, ticket);
    return tx.commit(now);
  } catch (error) {
    throw asSnapshotError(error);
  }
}

/** A release ticket as `evaluate` hands it out (DESIGN §7): a host that passes something else made a mistake. */
function assertTicket(ticket: ReleaseTicket): void {
  const t = ticket as Partial<Record<keyof ReleaseTicket, unknown>> | null;
  if (
    typeof t !== "object" ||
    t === null ||
    (t.cap !== "dispatch" && t.cap !== "testSend") ||
    typeof t.key !== "string" ||
    !Number.isSafeInteger(t.day) ||
    typeof t.member !== "string" ||
    (t.idempotencyKey !== undefined && typeof t.idempotencyKey !== "string")
  ) {
    throw new PolicyConfigError("decision.release", "must be the release ticket evaluate answered: { cap, key, day, member, idempotencyKey? }");
  }
}
