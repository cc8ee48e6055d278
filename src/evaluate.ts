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
import { readDescriptor, type DescriptorRead } from "./request.js";
import type { CapCharge, CounterTx, KeyRecord, WindowRecord } from "./store.js";
import { MAX_TIME } from "./time.js";
import type { Credential, Decision, PolicyRequest, ReleaseTicket, Roles } from "./types.js";

/** Records of one kind in two levels of 16 buckets, by a hash of their key (see {@link UsageData}). Internal. */
export type Buckets<T> = Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, T>>>>>>;

/** A budget window in a snapshot: when it ends is kept with it, so that it can be forgotten then. */
export interface SnapshotWindow extends WindowRecord {
  /** start + the budget's window (ms); absent in snapshots written before 0.1.0 was final. */
  readonly expiresAt?: number;
}

/** One day of a daily cap: who counted, and when the day ends. */
export interface CapDay {
  readonly resetAt: number;
  readonly members: readonly string[];
}

/**
 * A daily cap's counts, by day. Each day counts on its own: a request stamped on another day (a
 * clock stepped across midnight, or days ahead) never replaces or wipes today's count. `latest` is
 * the day of the latest charge: a release ticket of another day no longer uncounts, as in every store.
 */
export interface CapRecord {
  readonly latest: number;
  readonly days: Readonly<Record<string, CapDay>>;
}

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
  /**
   * The `now` of the latest change (ms). `evaluate` forgets a record only once it has expired by
   * both this time and its own `now`, so that one request stamped days ahead forgets nothing.
   */
  readonly at?: number;
  readonly windows: Buckets<SnapshotWindow>;
  readonly caps: Buckets<CapRecord>;
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

/** The members a daily cap counts on one day (for tests and inspection). */
export function capMembers(usage: Usage, key: string, day: number): readonly string[] {
  return own(recordIn(usageData(usage).caps, key)?.days, String(day))?.members ?? [];
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

/**
 * A clock reading must be a time a `Date` can hold: a finite number of milliseconds within
 * ±8.64e15 (about ±275 000 years around 1970). Fractions (`performance.timeOrigin +
 * performance.now()`) and times before 1970 are accepted. Past that range a window of a minute no
 * longer adds up (`1e22 + 60 000 === 1e22`), which would switch budgets off (DESIGN §10).
 */
export function assertNow(now: unknown, field: string): asserts now is number {
  if (typeof now !== "number" || !Number.isFinite(now) || Math.abs(now) > MAX_TIME) {
    throw new PolicyConfigError(field, `must be a time a Date can hold: finite milliseconds within ±${MAX_TIME}; got ${typeof now === "number" ? String(now) : typeof now}`);
  }
}

/** Reads a snapshot and writes into a draft only when the charge writes something. */
class SnapshotTx implements CounterTx {
  private readonly writes: Array<(draft: { -readonly [K in keyof UsageData]: any }) => void> = [];
  private seq: number;
  private readonly usage: UsageData;
  /** Which kinds this change writes: only those are pruned, so a change leaves every other kind the same object. */
  private wrote = { windows: false, caps: false, keys: false };

  constructor(snapshot: Usage) {
    this.usage = usageData(snapshot);
    this.seq = this.usage.seq;
  }

  window(key: string): WindowRecord | undefined {
    return recordIn(this.usage.windows, key);
  }
  setWindow(key: string, record: WindowRecord, windowMs: number): void {
    const stored: SnapshotWindow = { start: record.start, count: record.count, expiresAt: record.start + windowMs };
    this.wrote.windows = true;
    this.writes.push((d) => writeIn(d.windows, key, stored));
  }
  capCount(cap: CapCharge): number {
    return capMembers(this.usage as unknown as Usage, cap.key, cap.day).length;
  }
  addCapMember(cap: CapCharge, member: string): void {
    const day = String(cap.day);
    this.wrote.caps = true;
    this.writes.push((d) => {
      const record = recordIn<CapRecord>(d.caps, cap.key) as { latest: number; days: Record<string, { resetAt: number; members: string[] }> } | undefined;
      if (record === undefined) {
        writeIn<CapRecord>(d.caps, cap.key, { latest: cap.day, days: { [day]: { resetAt: cap.resetAt, members: [member] } } });
        return;
      }
      record.latest = cap.day;
      const today = own(record.days, day);
      if (today === undefined) record.days[day] = { resetAt: cap.resetAt, members: [member] };
      else today.members.push(member);
    });
  }
  removeCapMember(key: string, day: number, member: string): boolean {
    const record = recordIn(this.usage.caps, key);
    if (record === undefined) return false;
    // as the Redis store: a ticket of a day other than the latest charge's no longer uncounts, unless that day has ended and gone
    if (record.latest !== day && own(record.days, String(record.latest)) !== undefined) return false;
    const members = own(record.days, String(day))?.members;
    if (members === undefined || !members.includes(member)) return false;
    this.wrote.caps = true;
    this.writes.push((d) => {
      (recordIn<CapRecord>(d.caps, key)!.days[String(day)] as { members: readonly string[] }).members = members.filter((m) => m !== member);
    });
    return true;
  }
  keyRecord(key: string): KeyRecord | undefined {
    return recordIn(this.usage.keys, key);
  }
  setKeyRecord(key: string, record: KeyRecord): void {
    this.wrote.keys = true;
    this.writes.push((d) => writeIn(d.keys, key, record));
  }
  nextMember(): string {
    return `m${++this.seq}`;
  }

  /**
   * The next snapshot: the same object when nothing was written. A change also forgets what has
   * expired in one bucket of each kind it writes (the 256 buckets in turn, by `seq`): bounded work
   * per call, by the clock both this call and the previous change agree has passed.
   */
  commit(now: number): Usage {
    if (this.writes.length === 0) return this.usage as unknown as Usage;
    const seq = this.seq + 1;
    const settled = this.usage.at === undefined ? now : Math.min(now, this.usage.at);
    // seq moves by 1, or by 2 when a cap member is numbered: this walks all 256 buckets either way
    const slot = ((seq >>> 1) + (seq & 1) * 128) & 255;
    const outer = String(slot & 15);
    const inner = String(slot >>> 4);
    const next = produce(this.usage, (draft) => {
      for (const write of this.writes) write(draft);
      draft.seq = seq;
      draft.at = now;
      const base = this.usage;
      if (this.wrote.windows) pruneBucket(draft.windows, base.windows, outer, inner, (r: SnapshotWindow) => windowExpired(r, settled));
      if (this.wrote.keys) pruneBucket(draft.keys, base.keys, outer, inner, (r: KeyRecord) => settled >= r.expiresAt);
      if (this.wrote.caps) pruneCapBucket(draft.caps, base.caps, outer, inner, settled);
    });
    return next as unknown as Usage;
  }
}

function windowExpired(record: SnapshotWindow, now: number): boolean {
  return record.expiresAt !== undefined && now >= record.expiresAt;
}

type Draft<T> = Record<string, Record<string, Record<string, T>>>;

/**
 * Deletes the expired records of one bucket of a draft. Finds them in the base snapshot (plain
 * objects: no draft is made for a record that stays) and checks each again in the draft, where this
 * change may have written it anew.
 */
function pruneBucket<T>(draft: Draft<T>, base: Buckets<T>, outer: string, inner: string, expired: (record: T) => boolean): void {
  const bucket = own(own(base, outer), inner);
  if (bucket === undefined) return;
  let gone: string[] | undefined;
  for (const key in bucket) if (Object.hasOwn(bucket, key) && expired(bucket[key]!)) (gone ??= []).push(key);
  if (gone === undefined) return;
  const target = draft[outer]![inner]!;
  for (const key of gone) if (Object.hasOwn(target, key) && expired(target[key]!)) delete target[key];
  if (Object.keys(target).length === 0) {
    delete draft[outer]![inner];
    if (Object.keys(draft[outer]!).length === 0) delete draft[outer];
  }
}

function capExpired(record: CapRecord, now: number): boolean {
  for (const day in record.days) if (Object.hasOwn(record.days, day) && now < record.days[day]!.resetAt) return false;
  return true;
}

function pruneCapBucket(draft: Draft<CapRecord>, base: Buckets<CapRecord>, outer: string, inner: string, now: number): void {
  pruneBucket(draft, base, outer, inner, (r) => capExpired(r, now));
  const bucket = own(own(base, outer), inner);
  if (bucket === undefined) return;
  for (const key in bucket) {
    if (!Object.hasOwn(bucket, key) || !capHasExpiredDay(bucket[key]!, now)) continue;
    const record = own(own(own(draft, outer), inner), key);
    if (record === undefined) continue;
    const days = record.days as Record<string, CapDay>;
    for (const day in days) if (Object.hasOwn(days, day) && now >= days[day]!.resetAt) delete days[day];
  }
}

function anyIn<T>(buckets: Buckets<T>, expired: (record: T) => boolean): boolean {
  for (const [, record] of recordsIn(buckets)) if (expired(record)) return true;
  return false;
}

function capHasExpiredDay(record: CapRecord, now: number): boolean {
  for (const day in record.days) if (Object.hasOwn(record.days, day) && now >= record.days[day]!.resetAt) return true;
  return false;
}

/**
 * Forgets every record of a snapshot that has expired by `now`: ended budget windows, idempotency
 * records past their 24 hours, and days of daily caps that have ended. `evaluate` already forgets
 * as it goes (one bucket per change); call this to shrink a snapshot at once, e.g. before storing
 * it. Pure: the same inputs give the same snapshot, and nothing that can still count is dropped.
 * The host's clock is trusted here: a `now` days ahead forgets today's counts.
 *
 * @param usage - a snapshot from `emptyUsage()` or `evaluate`.
 * @param now - ms since the epoch (a time a `Date` can hold).
 * @returns the snapshot without expired records; the same object when nothing has expired.
 * @throws PolicyConfigError when `usage` is not a snapshot or `now` is not a time.
 * @example
 * usage = prune(usage, Date.now());
 * await save(JSON.stringify(usage));
 */
export function prune(snapshot: Usage, now: number): Usage {
  assertUsage(snapshot);
  assertNow(now, "now");
  const usage = usageData(snapshot);
  const windowGone = (r: SnapshotWindow) => windowExpired(r, now);
  const keyGone = (r: KeyRecord) => now >= r.expiresAt;
  const capGone = (r: CapRecord) => capHasExpiredDay(r, now);
  if (!anyIn(usage.windows, windowGone) && !anyIn(usage.keys, keyGone) && !anyIn(usage.caps, capGone)) return snapshot;
  const next = produce(usage, (draft) => {
    for (let slot = 0; slot < 256; slot++) {
      const outer = String(slot & 15);
      const inner = String(slot >>> 4);
      pruneBucket(draft.windows as Draft<SnapshotWindow>, usage.windows, outer, inner, windowGone);
      pruneBucket(draft.keys as Draft<KeyRecord>, usage.keys, outer, inner, keyGone);
      pruneCapBucket(draft.caps as Draft<CapRecord>, usage.caps, outer, inner, now);
    }
  });
  return next as unknown as Usage;
}

/** 64 bits of two FNV-1a hashes: a short stable id derived from the inputs (DESIGN §14). */
function derivedId(parts: readonly (string | number)[]): string {
  const text = parts.join("\u0000");
  return fnv1a(text).toString(16).padStart(8, "0") + fnv1a(text, 0x01000193, 2246822519).toString(16).padStart(8, "0");
}

/**
 * The parts of a descriptor that tell two requests apart, as text for a derived id: read from the
 * descriptor as `plan` read it (once, plain values only), each part bounded, so it never throws and
 * costs the same for a 10 MB string as for a short one.
 */
function describeInput(read: DescriptorRead): string {
  const query = read.query instanceof Map ? read.query : undefined;
  const text = (value: unknown): string => (typeof value === "string" ? value.slice(0, 512) : typeof value);
  let out = `${text(read.method)} ${text(read.path)} ${text(read.idempotencyKey)} ${text(read.newsletter)}`;
  if (query !== undefined) for (const [name, values] of query) out += ` ${name}=${values.join(",").slice(0, 512)}`;
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
  // the descriptor is read once, into plain values, by the same reader as `check`'s
  const read = readDescriptor(request);
  const planned = plan(config, read, credential, state.roles);
  const tx = new SnapshotTx(usage);
  const subject = subjectOf(credential);
  const requestId = requestIdOf(planned.requestId, () => derivedId([subject, describeInput(read), now, usageData(usage).seq]));
  const charge = chargeRequest(planned, subject, config, now, requestId);
  const outcome = runCharge(tx, charge);
  return { decision: render(planned, charge, outcome, config, now, requestId), usage: tx.commit(now) };
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
  assertNow(now, "now");
  const ticket: ReleaseTicket | undefined = decision.release;
  if (ticket === undefined) return usage;
  const tx = new SnapshotTx(usage);
  runRelease(tx, ticket, now);
  return tx.commit(now);
}
