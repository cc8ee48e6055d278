/**
 * Resets: an operator undoes counting for one credential or one newsletter. Each reset names what
 * it clears, and a store clears exactly that:
 *
 * - `{ credential }`: the credential's budget windows (every configured budget), its test-send count
 *   for today, and its idempotency records (so a retried key is a new request again).
 * - `{ newsletter }`: the newsletter's dispatch count for today.
 *
 * Nothing else is touched: other credentials, other newsletters, a credential's share of a
 * newsletter's dispatch count (that count belongs to the newsletter).
 */
import { asSnapshotError } from "./snapshot-check.js";
import { resolveConfig, type CompiledConfig, type PolicyConfig } from "./config.js";
import type { PolicyOptions } from "./config-types.js";
import { knownKeys } from "./config-fields.js";
import { PolicyConfigError } from "./errors.js";
import { dayOf } from "./calendar.js";
import { assertNow, assertUsage } from "./host-input.js";
import { capMembers, changeIn, inLayout, keepAll, nextUsage, recordsIn, usageData, windowExpiry, windowOf, type CapRecord, type Usage } from "./snapshot.js";
import { capExpiry, keyExpiry } from "./prune.js";
import { budgetKey, capKey, idempotencyScope, subjectOf } from "./store-keys.js";
import type { ResetRequest } from "./store.js";
import type { Credential } from "./types.js";


/**
 * What to reset: one credential (its budgets, test sends and idempotency records) or one
 * newsletter (its dispatches today).
 *
 * @example
 * await policy.reset({ credential });           // { id, kind } is enough
 * await policy.reset({ newsletter: "nl_1" });
 * // exactly one of the two: { credential, newsletter } is a compile error (and a PolicyConfigError at run time)
 */
export type ResetTarget = { readonly credential: Pick<Credential, "id" | "kind">; readonly newsletter?: never } | { readonly newsletter: string; readonly credential?: never };

/** Validates a reset target (host input: a mistake throws, DESIGN §10). */
export function assertTarget(target: unknown, field: string): asserts target is ResetTarget {
  const t = target as Record<string, unknown> | null;
  if (typeof t !== "object" || t === null) throw new PolicyConfigError(field, "must be { credential } or { newsletter }");
  // { credential, newsleter: "nl_1" } would reset the credential and leave the newsletter's count as it was
  knownKeys(t, field, ["credential", "newsletter"]);
  const hasCredential = t.credential !== undefined;
  const hasNewsletter = t.newsletter !== undefined;
  if (hasCredential === hasNewsletter) throw new PolicyConfigError(field, "must name exactly one of credential or newsletter");
  if (hasNewsletter) {
    if (typeof t.newsletter !== "string" || t.newsletter === "") throw new PolicyConfigError(`${field}.newsletter`, "must be a non-empty newsletter id");
    return;
  }
  const c = t.credential as Partial<Credential> | null;
  if (typeof c !== "object" || c === null) throw new PolicyConfigError(`${field}.credential`, "must be a credential ({ id, kind } is enough)");
  if (typeof c.id !== "string" || c.id === "") throw new PolicyConfigError(`${field}.credential.id`, "must be a non-empty string");
  if (c.kind !== "api_key" && c.kind !== "oauth") throw new PolicyConfigError(`${field}.credential.kind`, `must be "api_key" or "oauth"; got ${String(c.kind)}`);
}

/**
 * What a store must clear for a target.
 *
 * @param target - a validated {@link ResetTarget}.
 * @param config - the policy's config: its budgets and day start.
 * @param now - ms since the epoch: which day "today" is.
 */
export function resetRequest(target: ResetTarget, config: CompiledConfig, now: number): ResetRequest {
  const { day } = dayOf(now, config.dayOffsetMs);
  const offsetMs = config.dayOffsetMs;
  if ("newsletter" in target && target.newsletter !== undefined) {
    return { windows: [], caps: [{ key: capKey("dispatch", "", target.newsletter), day, offsetMs }] };
  }
  const subject = subjectOf((target as { credential: Pick<Credential, "id" | "kind"> }).credential);
  return {
    windows: config.budgets.map((b) => budgetKey(subject, b.name)),
    caps: [{ key: capKey("testSend", subject, ""), day, offsetMs }],
    idempotencyScope: idempotencyScope(subject),
  };
}

/** A cap record without one day's count (a new record, frozen). */
function withoutDay(record: CapRecord, day: number): CapRecord {
  const days = { ...record.days };
  delete days[String(day)];
  return Object.freeze({ ...record, days: Object.freeze(days) });
}

/** Clears a {@link ResetRequest} in a snapshot: the same object when there was nothing to clear. */
export function resetUsage(snapshot: Usage, request: ResetRequest): Usage {
  const usage = usageData(snapshot);
  const prefix = request.idempotencyScope === undefined ? undefined : `${request.idempotencyScope}:`;
  const keys = prefix === undefined ? [] : recordsIn(usage.keys).flatMap(([key]) => (key.startsWith(prefix) ? [key] : []));
  const windows = request.windows.filter((key) => windowOf(usage, key) !== undefined);
  const caps = request.caps.filter((cap) => capMembers(snapshot, cap.key, cap.day).length > 0);
  if (keys.length === 0 && windows.length === 0 && caps.length === 0) return snapshot;
  const gone = (): undefined => undefined;
  // a snapshot written before is placed anew (once) before it is changed
  const base = inLayout(usage);
  let [nextWindows, nextKeys, nextCaps] = [base.windows, base.keys, base.caps];
  // the other records of each leaf are kept as they are, with their leaf's bound
  for (const key of windows) nextWindows = changeIn(nextWindows, key, gone, keepAll(windowExpiry));
  for (const key of keys) nextKeys = changeIn(nextKeys, key, gone, keepAll(keyExpiry));
  // that day's count only; the idempotency records keep their charge, so a retry stays a replay
  for (const cap of caps) nextCaps = changeIn(nextCaps, cap.key, (r: CapRecord | undefined) => withoutDay(r!, cap.day), keepAll(capExpiry));
  return nextUsage(base, usage.seq + 1, usage.at, nextWindows, nextCaps, nextKeys);
}

/**
 * Resets one credential's or one newsletter's counters in a snapshot, purely (see {@link ResetTarget}
 * for what each clears; nothing else is touched).
 *
 * @param usage - the current counters.
 * @param target - `{ credential }` (budget windows, today's test sends, idempotency records) or
 *   `{ newsletter }` (today's dispatches).
 * @param now - ms since the epoch: which day is today.
 * @param config - the config the snapshot is decided with (its budgets and day start). Default: the spec's.
 * @returns the next counters; the same object when there was nothing to clear.
 * @throws PolicyConfigError when the target or `now` is invalid.
 * @example
 * usage = reset(usage, { credential: { id: "key_1", kind: "api_key" } }, Date.now());
 * usage = reset(usage, { newsletter: "nl_1" }, Date.now());
 */
export function reset(usage: Usage, target: ResetTarget, now: number, config?: PolicyConfig | PolicyOptions): Usage {
  assertTarget(target, "target");
  assertNow(now, "now");
  assertUsage(usage);
  const request = resetRequest(target, resolveConfig(config), now);
  try {
    return resetUsage(usage, request);
  } catch (error) {
    // no host code runs here: what is thrown is the snapshot's shape (a null bucket threw a
    // TypeError where evaluate, release and prune throw PolicyConfigError; found by a diff review)
    throw asSnapshotError(error);
  }
}
