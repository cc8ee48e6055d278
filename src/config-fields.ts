/**
 * Validating the host's options, field by field: each reader checks one option and resolves it with
 * the spec's default. Invalid input throws PolicyConfigError naming the field and the fix (DESIGN §10).
 */
import type { BudgetSpec, PolicyOptions } from "./config-types.js";
import type { BudgetOptions } from "./types.js";
import { PolicyConfigError } from "./errors.js";
import { distance } from "./host-input.js";
import { FAMILIES, LEVELS } from "./permissions.js";
import type { CapName, Family, Level } from "./types.js";

const BUILT_IN_BUDGETS: Record<string, BudgetOptions> = {
  general: { limit: 600, window: 60 },
  audience: { limit: 60, window: 60 },
  write: { limit: 60, window: 60 },
};

const ALL_WRITE = Object.freeze(Object.fromEntries(FAMILIES.map((f) => [f, "write"])) as Record<Family, Level>);

/** owner and admin can grant everything; an editor holds at most `settings: read` (spec §5.6). */
const BUILT_IN_ROLES: ReadonlyArray<[string, Readonly<Record<Family, Level>>]> = [
  ["owner", ALL_WRITE],
  ["admin", ALL_WRITE],
  ["editor", Object.freeze({ ...ALL_WRITE, settings: "read" as Level })],
];

const NAME = /^[a-z][a-z0-9_-]{0,31}$/;
/** The `docsUrl` when the host sets none (a placeholder: `defineConfig` warns about it). */
export const DEFAULT_DOCS_URL = "https://docs.example.com/errors";

export function isRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  // a plain object (of any realm) or one without a prototype: a Map, a class instance or an object
  // whose fields sit on its prototype would be read as empty, and the defaults would decide without
  // a word (budgets: new Map(...) kept general at 600; found by a config review)
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/** What a value that is not a plain object is, for messages. */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value !== "object") return typeof value;
  if (value instanceof Map) return "a Map (give a plain object)";
  if (value instanceof Set) return "a Set";
  return "an object that is not a plain one (a class instance, or fields on its prototype)";
}
/** Host typos fail loudly: a key the option does not know names itself (DESIGN §10). */
export function knownKeys(value: Record<string, unknown>, field: string, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      const where = field === "" ? key : `${field}.${key}`;
      throw new PolicyConfigError(where, `is not an option here; known: ${known.join(", ")}`);
    }
  }
}

/** An object option, or a PolicyConfigError saying what it must be. */
export function record(value: unknown, field: string, what: string): Record<string, unknown> {
  if (!isRecord(value)) throw new PolicyConfigError(field, `must be ${what}; got ${kindOf(value)}`);
  return value;
}

/**
 * The longest budget window, in seconds: ten years. Every store keeps a window's end in ms, and at
 * 10^14 s Redis could not: its charge script failed after it had charged (a 503 that counted, and a
 * key that never expired).
 */
export const WINDOW_MAX_SECONDS = 315_360_000;

/** A whole number ≥ `min`. */
export function wholeNumber(value: unknown, field: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
    throw new PolicyConfigError(field, `must be a whole number ${range}; got ${String(value)}`);
  }
  return value;
}

/** Every budget in policy order: the built-in ones with the host's sizes, then the host's. */
export function resolveBudgets(options: PolicyOptions["budgets"]): BudgetSpec[] {
  if (options !== undefined && !isRecord(options)) throw new PolicyConfigError("budgets", `must be an object; got ${kindOf(options)}`);
  // own names only: `constructor` or `__proto__` given by the host are its budgets' names, never the object prototype's
  const names = [...Object.keys(BUILT_IN_BUDGETS), ...Object.keys(options ?? {}).filter((n) => !Object.hasOwn(BUILT_IN_BUDGETS, n))];
  return names.map((name, order) => {
    if (!NAME.test(name)) throw new PolicyConfigError(`budgets.${name}`, "must be named in lower case: a-z, 0-9, _ or -");
    // a budget's name becomes a property name (policy.status's budgets, a plan's limits): not one that sets a prototype
    if (name === "__proto__") throw new PolicyConfigError(`budgets.${name}`, "is not a budget name an object can hold; give the budget another name");
    const given = options !== undefined && Object.hasOwn(options, name) ? record(options[name], `budgets.${name}`, "an object { limit, window }") : {};
    knownKeys(given, `budgets.${name}`, ["limit", "window"]);
    // a budget of the host's own needs a window; one named like the spec's without it is a misspelling
    // (audiance), which a message about its window would send the host the wrong way
    const meant = Object.hasOwn(BUILT_IN_BUDGETS, name) || given.window !== undefined ? undefined : Object.keys(BUILT_IN_BUDGETS).find((b) => distance(b, name) <= 2);
    if (meant !== undefined) throw new PolicyConfigError(`budgets.${name}`, `is not one of the spec's budgets (general, audience, write); did you mean ${meant}? A budget of your own needs a window, and an operation that charges it`);
    const base = Object.hasOwn(BUILT_IN_BUDGETS, name) ? BUILT_IN_BUDGETS[name] : undefined;
    const limit = wholeNumber(given.limit ?? base?.limit, `budgets.${name}.limit`, 1);
    const window = wholeNumber(given.window ?? base?.window, `budgets.${name}.window`, 1, WINDOW_MAX_SECONDS);
    return Object.freeze({ name, limit, window, order });
  });
}

/** The built-in roles and the host's (a family left out is capped at `none`). */
export function resolveRoles(options: PolicyOptions["roles"]): Map<string, Readonly<Record<Family, Level>>> {
  const roles = new Map(BUILT_IN_ROLES);
  if (options === undefined) return roles;
  if (!isRecord(options)) throw new PolicyConfigError("roles", `must be an object of role name → family caps; got ${kindOf(options)}`);
  for (const [name, caps] of Object.entries(options)) {
    const builtIn = BUILT_IN_ROLES.find(([b]) => b === name)?.[1];
    // a name a user store may spell a built-in with (Editor, "editor ", a fullwidth or zero-width-
    // spaced editor) would lift its cap (spec §5.6): compatibility forms and format characters fold
    // away first (found by a config review; look-alikes from other scripts are not caught)
    const plain = name.normalize("NFKC").replace(/\p{Cf}/gu, "").trim().toLowerCase();
    if (builtIn === undefined && (plain === "" || BUILT_IN_ROLES.some(([b]) => b === plain))) {
      throw new PolicyConfigError(`roles.${name}`, plain === "" ? "must be a role's name, not empty" : `differs from the built-in role "${plain}" only in case or spaces; give the owner the built-in name, or your role a name of its own`);
    }
    const resolved = roleCaps(name, caps);
    if (builtIn === undefined) {
      roles.set(name, resolved);
      continue;
    }
    // a config read back (defineConfig({ ...config, … })) names the built-in roles as they are: kept;
    // any other caps would change a role the spec defines (an editor with settings: write, spec §5.6)
    if (FAMILIES.some((family) => resolved[family] !== builtIn[family])) {
      throw new PolicyConfigError(`roles.${name}`, "is built in; give your role another name (a built-in role may be given only with its own caps, as defineConfig hands it back)");
    }
  }
  return roles;
}

/** A role's caps per family, validated; a family left out is capped at `none`. */
function roleCaps(name: string, caps: unknown): Readonly<Record<Family, Level>> {
  if (!isRecord(caps)) throw new PolicyConfigError(`roles.${name}`, `must be an object of family → level; got ${kindOf(caps)}`);
  const resolved = {} as Record<Family, Level>;
  for (const family of FAMILIES) resolved[family] = "none";
  for (const [family, level] of Object.entries(caps)) {
    if (!(FAMILIES as readonly string[]).includes(family)) {
      throw new PolicyConfigError(`roles.${name}.${family}`, `is not a family; use one of ${FAMILIES.join(", ")}`);
    }
    if (!(LEVELS as readonly unknown[]).includes(level)) {
      throw new PolicyConfigError(`roles.${name}.${family}`, `must be none, read or write; got ${String(level)}`);
    }
    resolved[family as Family] = level as Level;
  }
  return Object.freeze(resolved);
}

/** The daily caps' limits (spec §8: 25 dispatches per newsletter, 50 test sends per credential). */
export function resolveCaps(options: PolicyOptions["caps"]): Readonly<Record<CapName, { readonly limit: number }>> {
  const caps = record(options ?? {}, "caps", "an object { dispatch?, testSend? }");
  knownKeys(caps, "caps", ["dispatch", "testSend"]);
  const capLimit = (name: CapName, fallback: number): number => {
    if (caps[name] === undefined) return fallback;
    const cap = record(caps[name], `caps.${name}`, "an object { limit }");
    knownKeys(cap, `caps.${name}`, ["limit"]);
    return wholeNumber(cap.limit ?? fallback, `caps.${name}.limit`, 1);
  };
  const dispatch = capLimit("dispatch", 25);
  const testSend = capLimit("testSend", 50);
  return Object.freeze({ dispatch: Object.freeze({ limit: dispatch }), testSend: Object.freeze({ limit: testSend }) });
}

/** The base of `docs_url`, without a trailing slash. */
export function resolveDocsUrl(docsUrl: unknown): string {
  const parsedUrl = typeof docsUrl === "string" && URL.canParse(docsUrl) ? new URL(docsUrl) : undefined;
  // spec §2: docs_url is `{docs_url}/<code>`, so the base is an http(s) URL without query or fragment
  // checked as written, not only as parsed: a trailing "?" or "#", surrounding spaces or a line
  // break pass the parser and would be copied into every docs_url; a user and password would be
  // shown to every client (found by a config review)
  if (
    parsedUrl === undefined ||
    (parsedUrl.protocol !== "https:" && parsedUrl.protocol !== "http:") ||
    /[?#\s]/.test(docsUrl as string) ||
    parsedUrl.username !== "" ||
    parsedUrl.password !== ""
  ) {
    throw new PolicyConfigError("docsUrl", `must be an absolute http(s) URL without a query, fragment, spaces or credentials; got ${JSON.stringify(String(docsUrl)).slice(0, 120)}`);
  }
  return (docsUrl as string).replace(/\/+$/, "");
}

/** The unit of `Retry-After` for daily caps. */
export function resolveDailyRetryAfter(value: unknown): "hours" | "seconds" {
  if (value !== "hours" && value !== "seconds") throw new PolicyConfigError("dailyRetryAfter", `must be "hours" or "seconds"`);
  return value;
}

/** Where a day starts: the UTC offset (minutes) of the time zone whose midnight starts it (60: 23:00 UTC). */
export function resolveDayOffset(offset: unknown): number {
  if (typeof offset !== "number" || !Number.isInteger(offset) || Math.abs(offset) >= 24 * 60) {
    throw new PolicyConfigError("dayStartsAtUtcOffsetMinutes", "must be a whole number of minutes between -1439 and 1439");
  }
  return offset;
}
