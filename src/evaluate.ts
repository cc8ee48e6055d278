/**
 * The pure way through: plan → charge → render over an immutable immer snapshot of the counters.
 * No clock, no randomness, no I/O: the same inputs give the same decision.
 */
import { freeze, produce } from "immer";
import { resolveConfig, type PolicyConfig, type PolicyOptions } from "./config.js";
import { runCharge, runRelease } from "./charge.js";
import { PolicyConfigError } from "./errors.js";
import { fnv1a } from "./hash.js";
import { chargeRequest, subjectOf } from "./keys.js";
import { applyLimits, type Limits } from "./limits.js";
import { plan } from "./plan.js";
import { render } from "./render.js";
import type { CapCharge, CounterTx, KeyRecord, WindowRecord } from "./store.js";
import type { Credential, Decision, PolicyRequest, ReleaseTicket, Roles } from "./types.js";

/** Records of one kind in two levels of 16 buckets, by a hash of their key (see {@link UsageData}). Internal. */
export type Buckets<T> = Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, T>>>>>>;

declare const usageSnapshot: unique symbol;

/**
 * The counters of the pure API: an immutable (frozen) snapshot, replaced, never changed, by
 * `evaluate` and `release`. Opaque: start from `emptyUsage()` and pass on the `usage` each call
 * returns; its layout is not part of the API. It is plain JSON-safe data, so it can be stored and
 * restored as a whole.
 */
export interface Usage {
  /** @internal brand: made by `emptyUsage`, `evaluate` and `release` only. */
  readonly [usageSnapshot]: true;
}

/**
 * What a {@link Usage} holds. Budget windows and idempotency records, which grow with the
 * credentials a snapshot has seen, are kept in two levels of 16 buckets by a hash of their key: a
 * change copies two bucket indexes of at most 16 entries and one bucket of about n / 256 records,
 * not every record, so `evaluate` costs about the same with 2 or 10 000 credentials in one snapshot.
 */
export interface UsageData {
  /** Counts changes; part of derived request ids, so that two identical requests get two ids. */
  readonly seq: number;
  readonly windows: Buckets<WindowRecord>;
  readonly caps: Readonly<Record<string, { readonly day: number; readonly members: readonly string[] }>>;
  readonly keys: Buckets<KeyRecord>;
}

function bucketsOf(key: string): [string, string] {
  const h = fnv1a(key);
  return [String(h & 15), String((h >>> 4) & 15)];
}

function own<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** The record stored under `key`, wherever its bucket is. */
export function recordIn<T>(buckets: Buckets<T>, key: string): T | undefined {
  const [outer, inner] = bucketsOf(key);
  return own(own(own(buckets, outer), inner), key);
}

function writeIn<T>(buckets: Record<string, Record<string, Record<string, T>>>, key: string, record: T): void {
  const [outer, inner] = bucketsOf(key);
  ((buckets[outer] ??= {})[inner] ??= {})[key] = record;
}

/** Removes the record stored under `key` from a draft (for `reset`); true when it was there. */
export function removeIn<T>(buckets: Record<string, Record<string, Record<string, T>>>, key: string): boolean {
  const [outer, inner] = bucketsOf(key);
  const records = own(own(buckets, outer), inner);
  if (records === undefined || !Object.hasOwn(records, key)) return false;
  delete records[key];
  return true;
}

/** Every record of a bucketed kind, for tests and inspection. */
export function recordsIn<T>(buckets: Buckets<T>): [string, T][] {
  return Object.values(buckets).flatMap((inner) => Object.values(inner).flatMap((records) => Object.entries(records)));
}

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
   * in the call is compiled on every call (~200 µs).
   */
  readonly config?: PolicyConfig | PolicyOptions;
  /** The plan's limits (budgets and caps in the config's shape); see `Who.limits`. Default: the config's. */
  readonly limits?: Limits;
}

const EMPTY = freeze({ seq: 0, windows: {}, caps: {}, keys: {} }, true) as UsageData as unknown as Usage;

/** The data inside a snapshot (for the engine and its tests). */
export function usageData(usage: Usage): UsageData {
  return usage as unknown as UsageData;
}

/**
 * An empty set of counters to start from.
 *
 * @returns a frozen, empty {@link Usage}.
 * @example
 * let usage = emptyUsage();
 */
export function emptyUsage(): Usage {
  return EMPTY;
}

/** Host input checks: these are programming mistakes, so they throw (DESIGN §10). */
export function assertCredential(credential: unknown): asserts credential is Credential {
  const c = credential as Partial<Credential> | null;
  if (typeof c !== "object" || c === null) throw new PolicyConfigError("credential", "must be a credential object");
  if (typeof c.id !== "string" || c.id === "") throw new PolicyConfigError("credential.id", "must be a non-empty string");
  if (typeof c.newsletters !== "object" || c.newsletters === null) {
    throw new PolicyConfigError("credential.newsletters", "must be an object of newsletter id → grants");
  }
  if (c.kind !== "api_key" && c.kind !== "oauth") throw new PolicyConfigError("credential.kind", `must be "api_key" or "oauth"; got ${String(c.kind)}`);
}

/** Roles are the host's data: a record of newsletter → role, or a function (DESIGN §10). */
export function assertRoles(roles: unknown): asserts roles is Roles {
  if (typeof roles !== "function" && (typeof roles !== "object" || roles === null)) {
    throw new PolicyConfigError("roles", `must be an object of newsletter id → role, or a function (newsletter) => role; got ${roles === null ? "null" : typeof roles}`);
  }
}

export function assertUsage(usage: unknown): asserts usage is Usage {
  const u = usage as Partial<UsageData> | null;
  if (typeof u !== "object" || u === null || typeof u.windows !== "object" || typeof u.caps !== "object" || typeof u.keys !== "object") {
    throw new PolicyConfigError("usage", "must be a Usage snapshot: emptyUsage() or the usage an earlier evaluate returned");
  }
}

/** A clock reading must be a finite number of milliseconds (DESIGN §10). */
export function assertNow(now: unknown, field: string): asserts now is number {
  if (typeof now !== "number" || !Number.isFinite(now)) throw new PolicyConfigError(field, `must be a finite number of milliseconds; got ${String(now)}`);
}

/** Reads a snapshot and writes into a draft only when the charge writes something. */
class SnapshotTx implements CounterTx {
  private readonly writes: Array<(draft: { -readonly [K in keyof UsageData]: any }) => void> = [];
  private seq: number;
  private readonly usage: UsageData;

  constructor(snapshot: Usage) {
    this.usage = usageData(snapshot);
    this.seq = this.usage.seq;
  }

  window(key: string): WindowRecord | undefined {
    return recordIn(this.usage.windows, key);
  }
  setWindow(key: string, record: WindowRecord): void {
    this.writes.push((d) => writeIn(d.windows, key, record));
  }
  capCount(cap: CapCharge): number {
    const entry = Object.hasOwn(this.usage.caps, cap.key) ? this.usage.caps[cap.key] : undefined;
    return entry !== undefined && entry.day === cap.day ? entry.members.length : 0;
  }
  addCapMember(cap: CapCharge, member: string): void {
    const fresh = this.capCount(cap) === 0;
    this.writes.push((d) => {
      if (fresh) d.caps[cap.key] = { day: cap.day, members: [member] };
      else d.caps[cap.key].members.push(member);
    });
  }
  removeCapMember(key: string, day: number, member: string): boolean {
    const entry = Object.hasOwn(this.usage.caps, key) ? this.usage.caps[key] : undefined;
    if (entry === undefined || entry.day !== day || !entry.members.includes(member)) return false;
    this.writes.push((d) => {
      d.caps[key].members = entry.members.filter((m) => m !== member);
    });
    return true;
  }
  keyRecord(key: string): KeyRecord | undefined {
    return recordIn(this.usage.keys, key);
  }
  setKeyRecord(key: string, record: KeyRecord): void {
    this.writes.push((d) => writeIn(d.keys, key, record));
  }
  nextMember(): string {
    return `m${++this.seq}`;
  }

  /** The next snapshot: the same object when nothing was written. */
  commit(): Usage {
    if (this.writes.length === 0) return this.usage as unknown as Usage;
    const seq = this.seq + 1;
    const next = produce(this.usage, (draft) => {
      for (const write of this.writes) write(draft);
      draft.seq = seq;
    });
    return next as unknown as Usage;
  }
}

/** 64 bits of two FNV-1a hashes: a short stable id derived from the inputs (DESIGN §14). */
function derivedId(parts: readonly (string | number)[]): string {
  const text = parts.join("\u0000");
  return fnv1a(text).toString(16).padStart(8, "0") + fnv1a(text, 0x01000193, 2246822519).toString(16).padStart(8, "0");
}

/** The parts of a descriptor that tell two requests apart, as text for a derived id. Reads strings only, so it never throws. */
function describeInput(request: unknown): string {
  if (typeof request !== "object" || request === null) return typeof request;
  const r = request as Record<string, unknown>;
  const text = (value: unknown): string => (typeof value === "string" ? value : Array.isArray(value) ? value.filter((v) => typeof v === "string").join(",") : typeof value);
  let out = `${text(r.method)} ${text(r.path)} ${text(r.idempotencyKey)} ${text(r.newsletter)}`;
  if (typeof r.query === "object" && r.query !== null) {
    for (const name of Object.keys(r.query)) out += ` ${name}=${text((r.query as Record<string, unknown>)[name])}`;
  }
  return out;
}

/** `req_<id>`: the host's id (prefixed when it lacks `req_`), or the fallback. */
export function requestIdOf(given: string | undefined, fallback: () => string): string {
  if (given === undefined || given === "req_") return `req_${fallback()}`;
  return given.startsWith("req_") ? given : `req_${given}`;
}

/**
 * Decides one request, purely: plan → charge → render over an immutable snapshot.
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
  assertUsage(state.usage);
  assertNow(state.now, "now");
  const { credential, usage, now } = state;
  const planned = plan(config, request, credential, state.roles);
  const tx = new SnapshotTx(usage);
  const subject = subjectOf(credential);
  const requestId = requestIdOf(planned.requestId, () => derivedId([subject, describeInput(request), now, usageData(usage).seq]));
  const charge = chargeRequest(planned, subject, config, now, requestId);
  const outcome = runCharge(tx, charge);
  return { decision: render(planned, charge, outcome, config, now, requestId), usage: tx.commit() };
}

/**
 * Uncounts a daily-cap charge whose send or schedule then failed downstream (DESIGN §2, §7).
 * Releasing twice, or releasing a decision that charged no cap, changes nothing.
 *
 * @param usage - the current counters.
 * @param decision - the allowed decision that counted toward the cap.
 * @param now - ms since the epoch: an idempotency record that has expired by then is left alone.
 * @returns the next counters; the same object when nothing was released.
 * @example
 * if (sendFailed) usage = release(usage, decision, Date.now());
 */
export function release(usage: Usage, decision: Pick<Decision, "release">, now: number): Usage {
  const ticket: ReleaseTicket | undefined = decision.release;
  if (ticket === undefined) return usage;
  assertNow(now, "now");
  const tx = new SnapshotTx(usage);
  runRelease(tx, ticket, now);
  return tx.commit();
}
