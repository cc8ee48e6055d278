/**
 * Checks of what the host passes in (credential, roles, a snapshot, a clock reading): these are
 * programming mistakes, so they throw PolicyConfigError naming the field (DESIGN §10).
 */
import { describeThrown, PolicyConfigError } from "./errors.js";
import { isThenable } from "./thenable.js";
import { LAYOUT, type Usage, type UsageData } from "./snapshot.js";
import { notASnapshot } from "./snapshot-check.js";
import { MAX_TIME } from "./time.js";
import type { Credential, Roles } from "./types.js";

/** A credential object as `Credential` describes it. */
export function assertCredential(credential: unknown): asserts credential is Credential {
  try {
    checkCredential(credential);
  } catch (error) {
    throw hostError("credential", error);
  }
}

/**
 * What a read of the host's `field` (its credential or roles) threw, as a PolicyConfigError naming
 * the field, the host's error as its cause: a getter or a Proxy that throws, a revoked Proxy, a
 * roles function that throws (found by a shapes drill: a bare TypeError reached the caller). One
 * already a PolicyConfigError as it is. Callers catch inline (no closure on the hot path).
 */
export function hostError(field: string, error: unknown): PolicyConfigError {
  if (error instanceof PolicyConfigError) return error;
  return new PolicyConfigError(field, `could not be read (a getter, a Proxy or a function that throws): ${describeThrown(error)}`, { cause: error });
}

function checkCredential(credential: unknown): void {
  const c = credential as Partial<Credential> | null;
  if (typeof c !== "object" || c === null) throw new PolicyConfigError("credential", "must be a credential object");
  if (typeof c.id !== "string" || c.id === "") throw new PolicyConfigError("credential.id", "must be a non-empty string");
  if (typeof c.newsletters !== "object" || c.newsletters === null || isCollection(c.newsletters)) {
    throw new PolicyConfigError("credential.newsletters", `must be a plain object of newsletter id → grants; got ${shapeOf(c.newsletters)}`);
  }
  if (c.kind !== "api_key" && c.kind !== "oauth") throw new PolicyConfigError("credential.kind", `must be "api_key" or "oauth"; got ${String(c.kind)}`);
  // `account: "read"` (the scope's spelling) would otherwise be read as no account access, and every account call answered 403
  const account: unknown = c.account;
  if (account !== undefined && typeof account !== "boolean") {
    throw new PolicyConfigError("credential.account", `must be true or false (account: read held or not); got ${shapeOf(account)}${typeof account === "string" ? ` "${account.slice(0, 32)}"` : ""}`);
  }
}

/**
 * A Map, Set or array where a plain object of id → value is asked for: its entries are not its
 * properties, so every lookup would miss (every request 404) rather than fail loudly.
 */
function isCollection(value: object): boolean {
  return value instanceof Map || value instanceof Set || Array.isArray(value);
}

function shapeOf(value: unknown): string {
  if (value === null) return "null";
  if (value instanceof Map) return "a Map (pass Object.fromEntries(map))";
  if (value instanceof Set) return "a Set";
  if (Array.isArray(value)) return "an array";
  return typeof value;
}

/** Edit distance of two short names (insertions, deletions, substitutions), for telling a typo. */
export function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

/** The one of `known` that `name` misspells (`limts`, `Limits` for `limits`), if any. */
export function meantName(name: string, known: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  return known.find((k) => lower === k.toLowerCase() || distance(lower, k.toLowerCase()) <= 2);
}

/**
 * A host object's own field that is a misspelling of one of `known` (`limit`, `limts`, `Limits` for
 * `limits`): it would be dropped without a word, and the config's limits decide instead of the
 * plan's (more than a stricter plan allows). Fields of other names are the host's own and pass
 * (a `who` may carry the host's user along). Walked without a list made: this runs on every check.
 */
export function assertNoMisspelt(value: object, field: string, known: readonly string[]): void {
  for (const name in value) {
    if (known.includes(name) || !Object.hasOwn(value, name) || name.length > 32) continue;
    const meant = meantName(name, known);
    if (meant !== undefined) throw new PolicyConfigError(`${field}.${name}`, `is not a field of ${field}; did you mean ${meant}? (known: ${known.join(", ")})`);
  }
}

/** Roles are the host's data: a record of newsletter → role, or a function (DESIGN §10). */
export function assertRoles(roles: unknown): asserts roles is Roles {
  if (typeof roles === "function") return;
  let collection: boolean;
  try {
    collection = typeof roles === "object" && roles !== null && isCollection(roles);
  } catch (error) {
    throw hostError("roles", error);
  }
  if (typeof roles !== "object" || roles === null || collection) {
    throw new PolicyConfigError("roles", `must be an object of newsletter id → role, or a function (newsletter) => role; got ${shapeOf(roles)}`);
  }
}

/**
 * A role a host's roles give for a newsletter that is a host mistake: a Promise (an async lookup,
 * which would otherwise answer every request 404 with no word of why), or, from a roles object, an
 * own value that is not a role's name. Anything else not a name reaches nothing (404): a roles
 * function may be a plain lookup (`(n) => roles[n]`), and the newsletter it is called with comes
 * from the request, so `__proto__` hands back `Object.prototype`: untrusted input never throws.
 */
export function assertRole(role: unknown, newsletter: string, fromFunction: boolean): void {
  if (role === undefined || role === null || typeof role === "string") return;
  const shown = newsletter.slice(0, 64);
  if (isThenable(role)) {
    throw new PolicyConfigError("roles", `gave a Promise for "${shown}": resolve the roles before the call (an adapter's who() may be async); a roles function must answer synchronously`);
  }
  if (!fromFunction) throw new PolicyConfigError(`roles.${shown}`, `must be a role's name (a string); got ${shapeOf(role)}`);
}

/** A snapshot `emptyUsage`, `evaluate` or `release` made. */
export function assertUsage(usage: unknown): asserts usage is Usage {
  const u = usage as Partial<UsageData> | null;
  if (typeof u !== "object" || u === null || typeof u.windows !== "object" || typeof u.caps !== "object" || typeof u.keys !== "object") {
    throw new PolicyConfigError("usage", "must be a Usage snapshot: emptyUsage() or the usage an earlier evaluate returned");
  }
  // A layout or a kind of another shape was read as an empty snapshot: a spent budget and a spent
  // cap answered 200 (a newer version's layout, `"2"`, `windows: []`; found by a black-box review).
  // The records met on the way are checked as they are read (snapshot-check.ts, snapshot.ts slotOf).
  const layout: unknown = u.layout;
  if (layout !== undefined && layout !== LAYOUT) throw notASnapshot(`its layout is ${JSON.stringify(layout) ?? typeof layout}, where this version reads ${LAYOUT} (or none: a snapshot written before)`);
  // each kind by name: this runs on every evaluate
  if (!isBuckets(u.windows) || !isBuckets(u.caps) || !isBuckets(u.keys)) throw notASnapshot("its windows, caps or keys are not 16 buckets");
}

/** A kind's top level as a snapshot holds it: 16 buckets, or (written before) an object of them. */
function isBuckets(level: unknown): boolean {
  return Array.isArray(level) ? level.length === 16 : level !== null;
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
