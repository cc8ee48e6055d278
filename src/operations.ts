/**
 * Compiling the operation catalogue: the defaults merged with the host's operations, each validated
 * and compiled into what routing and planning read (its budgets, `RateLimit-Policy` header, path
 * segments and the position of `{newsletter}`).
 */
import { defaultOperations, UNSTATED_NEEDS, type Method, type OperationSpec } from "./catalogue.js";
import type { BudgetSpec } from "./config-types.js";
import { isRecord, knownKeys, wholeNumber } from "./config-fields.js";
import { PolicyConfigError } from "./errors.js";
import { parseRequirement, requirementParts, type ParsedRequirement } from "./permissions.js";
import type { Requirement } from "./types.js";

/** A catalogue operation compiled for routing and planning. */
export interface CompiledOperation {
  readonly spec: OperationSpec;
  readonly id: string;
  readonly needs: Requirement | undefined;
  /** `needs` read into its parts once, here, rather than looked up on every request. */
  readonly need: ParsedRequirement | undefined;
  /** Every budget it is charged to, in policy order; `general` first. */
  readonly budgets: readonly BudgetSpec[];
  /** `RateLimit-Policy` for this operation, computed once. */
  readonly policyHeader: string;
  readonly isWrite: boolean;
  /** Literal segments (string) and parameter segments (null). */
  readonly segments: readonly (string | null)[];
  /** Index of the `{newsletter}` segment, or -1. */
  readonly newsletterAt: number;
  /**
   * A host's operation that needs nothing and names no newsletter in its path: where a request to
   * it names its newsletter (`PolicyRequest.newsletter`), reach is checked on that newsletter
   * (DESIGN §8), as for every operation on a newsletter. (The built-in `GET /rate-limit` needs
   * nothing and is on no newsletter.)
   */
  readonly reachWhenNamed: boolean;
  readonly expandPaths: readonly string[];
}

/** An operation to compile, and how its field is named in errors. */
export interface OperationEntry {
  readonly spec: OperationSpec;
  readonly field: string;
  /** The built-in operation a host's entry takes the place of (its spec laid over this one). */
  readonly replaces?: OperationSpec;
}

const METHODS: readonly Method[] = ["GET", "POST", "PUT", "PATCH", "DELETE"];
const OPERATION_KEYS = ["id", "method", "path", "needs", "budgets", "cap", "filters", "expand", "paginated", "list"] as const;

/** The `RateLimit-Policy` header of a list of budgets. */
export function policyHeader(budgets: readonly BudgetSpec[]): string {
  // spec §8: each as a quoted name, q=<limit>, w=<window seconds>, separated by semicolons
  return budgets.map((b) => `"${b.name}";q=${b.limit};w=${b.window}`).join(", ");
}

/**
 * The catalogue in force: an operation with a built-in's id takes its place, over it (DESIGN §9: the
 * unstated permissions are configurable; see {@link checkReplacements} for what it may change); any
 * other id adds an operation.
 */
export function operationEntries(operations: unknown): OperationEntry[] {
  if (operations !== undefined && !Array.isArray(operations)) throw new PolicyConfigError("operations", "must be an array of operations");
  const given = ((operations as OperationSpec[] | undefined) ?? []).map((spec, i) => ({ spec, field: `operations[${i}]` }));
  const builtInIds = new Set(defaultOperations.map((op) => op.id));
  const replaced = new Map<string, { spec: OperationSpec; field: string }>();
  for (const g of given) {
    if (!isRecord(g.spec) || !builtInIds.has(g.spec.id)) continue;
    // a second replacement of one built-in was taken for a new operation and named its missing method
    const first = replaced.get(g.spec.id);
    if (first !== undefined) throw new PolicyConfigError(`${g.field}.id`, `replaces the built-in "${g.spec.id}" a second time (${first.field} replaces it already): give one replacement`);
    replaced.set(g.spec.id, g);
  }
  return [
    ...defaultOperations.map((spec, i) => {
      const replacement = replaced.get(spec.id);
      return replacement === undefined ? { spec, field: `defaultOperations[${i}]` } : { spec: overBuiltIn(spec, replacement.spec), field: replacement.field, replaces: spec };
    }),
    ...given.filter((g) => !replaced.has(g.spec?.id) || replaced.get(g.spec.id) !== g),
  ];
}

/**
 * A replacement over the built-in it replaces: what it leaves out (or gives as undefined) is the
 * built-in's, so that `{ id: "events.list", needs: "insights: read" }` changes the permission and
 * nothing else. What it gives is checked against what the spec states ({@link checkReplacements}).
 */
function overBuiltIn(builtIn: OperationSpec, replacement: OperationSpec): OperationSpec {
  const merged: Record<string, unknown> = { ...builtIn };
  for (const [name, value] of Object.entries(replacement)) if (value !== undefined) merged[name] = value;
  return merged as unknown as OperationSpec;
}

/** Plain data equal whatever the order of its keys (filters, expand paths, list bounds). */
function sameData(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameData(x, b[i]));
  if (!isRecord(a) || !isRecord(b)) return false;
  const keys = Object.keys(a).filter((k) => a[k] !== undefined);
  return keys.length === Object.keys(b).filter((k) => b[k] !== undefined).length && keys.every((k) => Object.hasOwn(b, k) && sameData(a[k], b[k]));
}

/**
 * A host's operation that replaces a built-in one (by its id) keeps what the spec states of it:
 * its method and path, its permission (unless the spec leaves that unstated: {@link UNSTATED_NEEDS}),
 * its budgets (more may be added), its daily cap, its reader filters, its expand paths, its
 * pagination and its list bound. Replacing by id is there to change the unstated permissions
 * (DESIGN §9), not to lift a stated rule: a replacement that would throws, naming the field.
 */
function checkReplacement(spec: OperationSpec, builtIn: OperationSpec, field: string): void {
  // `spec` is the replacement over the built-in (overBuiltIn): a field it differs in is one the host gave
  const id = builtIn.id;
  const keeps = (name: string, what: string): never => {
    throw new PolicyConfigError(`${field}.${name}`, `replaces the built-in "${id}", which ${what}; a replacement may change only the permission the spec leaves unstated (${[...UNSTATED_NEEDS].join(", ")}) and add budgets`);
  };
  if (spec.method !== builtIn.method || spec.path !== builtIn.path) keeps(spec.method !== builtIn.method ? "method" : "path", `is ${builtIn.method} ${builtIn.path} (spec §4)`);
  if (!UNSTATED_NEEDS.has(id) && spec.needs !== builtIn.needs) keeps("needs", builtIn.needs === undefined ? "needs no permission (spec §4)" : `needs ${builtIn.needs} (spec §4, §5)`);
  // an unstated permission is a newsletter's: account: read would skip the newsletter and the role cap
  if (spec.needs === "account: read" && builtIn.needs !== "account: read") keeps("needs", `belongs to a newsletter: its permission is a family's on that newsletter (spec §2, §5), not account: read`);
  for (const budget of builtIn.budgets ?? []) {
    if (!(spec.budgets ?? []).includes(budget)) keeps("budgets", `counts against ${budget} (spec §4)`);
  }
  if (spec.cap !== builtIn.cap) keeps("cap", builtIn.cap === undefined ? "counts toward no daily cap" : `counts toward the ${builtIn.cap} daily cap (spec §1, §8)`);
  if (!sameData(spec.filters, builtIn.filters)) keeps("filters", builtIn.filters === undefined ? "has no reader filters" : "has the reader filters of spec §7 #4–#6");
  if (!sameData(spec.expand, builtIn.expand)) keeps("expand", builtIn.expand === undefined ? "expands nothing" : "has the expand paths of spec §4 and §7 #7");
  if ((spec.paginated ?? false) !== (builtIn.paginated ?? false)) keeps("paginated", builtIn.paginated === true ? "is a list with `limit` (spec §4)" : "is not a list");
  if (!sameData(spec.list, builtIn.list)) keeps("list", builtIn.list === undefined ? "has no bounded list" : `bounds ${builtIn.list.field} to ${builtIn.list.max} (spec §8)`);
}

/**
 * Every host operation that took a built-in's place ({@link operationEntries}) keeps what the spec
 * states of it; an operation the host adds on a newsletter's path may not need `account: read`
 * (that branch runs no newsletter check and no role cap). That no host operation takes a built-in's
 * requests is the route table's rule (router.ts `buildRoutes`).
 */
export function checkReplacements(entries: readonly OperationEntry[]): void {
  for (const entry of entries) {
    if (entry.replaces !== undefined) checkReplacement(entry.spec, entry.replaces, entry.field);
    else if (!isBuiltIn(entry) && entry.spec.needs === undefined && (entry.spec.path.split("/").includes("{newsletter}") || entry.spec.cap !== undefined)) {
      // fail closed (DESIGN §11): a newsletter's operation without a permission let a credential
      // minted for that newsletter with no family at all through, and spend its daily cap (found
      // by a config review); every built-in one names its permission
      throw new PolicyConfigError(`${entry.field}.needs`, `is required for an operation on a newsletter's resource (${entry.spec.path}${entry.spec.cap === undefined ? "" : `, with the ${entry.spec.cap} cap`}): name the family and level it needs, e.g. "content: read"`);
    } else if (!isBuiltIn(entry) && entry.spec.needs === "account: read" && entry.spec.path.split("/").includes("{newsletter}")) {
      throw new PolicyConfigError(`${entry.field}.needs`, `is account: read on a newsletter's path (${entry.spec.path}): a newsletter's operation needs a family's permission there (spec §2, §5), so that the newsletter and the owner's role are checked`);
    }
  }
}

/** A built-in operation, as the catalogue has it or with a host's replacement laid over it. */
export function isBuiltIn(entry: OperationEntry): boolean {
  return entry.replaces !== undefined || entry.field.startsWith("defaultOperations[");
}

function checkShape(spec: OperationSpec, field: string): void {
  if (!isRecord(spec)) throw new PolicyConfigError(field, "must be an operation object");
  knownKeys(spec as unknown as Record<string, unknown>, field, OPERATION_KEYS);
  if (typeof spec.id !== "string" || spec.id === "") throw new PolicyConfigError(`${field}.id`, "must be a non-empty string");
  // an id becomes a property name (permitted's filters and expand): not one that sets a prototype (found by a permissions review)
  if (spec.id === "__proto__") throw new PolicyConfigError(`${field}.id`, "is not an id an object can hold; give the operation another id");
  if (spec.budgets !== undefined && (!Array.isArray(spec.budgets) || spec.budgets.some((b) => typeof b !== "string"))) {
    throw new PolicyConfigError(`${field}.budgets`, "must be an array of budget names");
  }
  if (spec.paginated !== undefined && typeof spec.paginated !== "boolean") throw new PolicyConfigError(`${field}.paginated`, "must be true or false");
  if (!METHODS.includes(spec.method)) throw new PolicyConfigError(`${field}.method`, `must be one of ${METHODS.join(", ")}`);
  if (typeof spec.path !== "string" || !spec.path.startsWith("/")) {
    throw new PolicyConfigError(`${field}.path`, "must be a path template starting with /");
  }
}

function checkCap(spec: OperationSpec, field: string, needs: Requirement | undefined, segments: readonly string[], newsletterAt: number): void {
  if (spec.cap !== undefined && spec.cap !== "dispatch" && spec.cap !== "testSend") {
    throw new PolicyConfigError(`${field}.cap`, "must be dispatch or testSend");
  }
  if (spec.cap !== undefined && (needs === "account: read" || (newsletterAt < 0 && !segments.some((s) => s.startsWith("{"))))) {
    throw new PolicyConfigError(`${field}.cap`, "needs an operation on a newsletter's resource");
  }
}

function checkDetails(spec: OperationSpec, field: string): void {
  // shapes a request could never use, and misspelt keys, throw rather than pass unused (found by a config review)
  for (const name of ["expand", "filters"] as const) {
    if (spec[name] !== undefined && (!isRecord(spec[name]) || Array.isArray(spec[name]))) throw new PolicyConfigError(`${field}.${name}`, "must be an object of name → rule");
  }
  for (const [path, need] of Object.entries(spec.expand ?? {})) {
    if (path === "" || path.includes(",")) throw new PolicyConfigError(`${field}.expand.${path}`, "must be a path a request can name: not empty, no comma (expand=a,b names two paths)");
    if (parseRequirement(need) === null) throw new PolicyConfigError(`${field}.expand.${path}`, "must be a permission");
  }
  for (const [name, rule] of Object.entries(spec.filters ?? {})) {
    if (!isRecord(rule) || !Array.isArray(rule.reader) || rule.reader.some((v) => typeof v !== "string")) {
      throw new PolicyConfigError(`${field}.filters.${name}.reader`, "must be an array of strings");
    }
    knownKeys(rule as unknown as Record<string, unknown>, `${field}.filters.${name}`, ["reader", "specCase"]);
    if (rule.specCase !== undefined && rule.specCase !== 4 && rule.specCase !== 5 && rule.specCase !== 6) {
      throw new PolicyConfigError(`${field}.filters.${name}.specCase`, "must be 4, 5 or 6 (spec §7's insufficient_scope rows)");
    }
  }
  if (spec.list !== undefined) {
    if (!isRecord(spec.list) || typeof spec.list.field !== "string") throw new PolicyConfigError(`${field}.list.field`, "must be a string");
    knownKeys(spec.list as unknown as Record<string, unknown>, `${field}.list`, ["field", "min", "max", "items"]);
    const min = wholeNumber(spec.list.min, `${field}.list.min`, 0);
    wholeNumber(spec.list.max, `${field}.list.max`, Math.max(min, 1));
    if (typeof spec.list.items !== "string") throw new PolicyConfigError(`${field}.list.items`, "must be a string: what the list holds, for messages (addresses)");
  }
}

/**
 * A template's segments are what a request's decoded segments can equal: no empty one, no `.` or
 * `..`, no query or fragment, no `/`-breaking or control characters; a parameter is exactly
 * `{name}`. Anything else could never match, and the operation would be refused as unknown.
 */
function checkSegments(segments: readonly string[], field: string): void {
  const params = new Set<string>();
  for (const segment of segments) {
    // a parameter named twice: the policy judges one segment and the framework hands the handler the
    // other (Express and Fastify give the last): /newsletters/{newsletter}/x/{newsletter} was
    // judged on nl_1 and served nl_2 (found by a config review)
    if (segment.startsWith("{")) {
      if (params.has(segment)) throw new PolicyConfigError(field, `names the parameter ${segment} twice: a framework hands the handler one of them, the policy would judge the other`);
      params.add(segment);
    }
    if (segment === "") throw new PolicyConfigError(field, "has an empty segment");
    if (segment === "." || segment === "..") throw new PolicyConfigError(field, `has a "${segment}" segment, which no request path keeps`);
    // eslint-disable-next-line no-control-regex
    if (/[?#\\\u0000-\u001f\u007f]/.test(segment)) throw new PolicyConfigError(field, "must be a path only: no query (?), fragment (#), backslash or control character");
    if ((segment.includes("{") || segment.includes("}")) && !/^\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(segment)) {
      throw new PolicyConfigError(field, `has a segment "${segment}" that is neither a literal nor a whole {parameter}`);
    }
    // templates no request can match, or a newsletter parameter under another name (found by a config review)
    if (segment.startsWith(":")) throw new PolicyConfigError(field, `has "${segment}", an Express-style parameter: write {${segment.slice(1)}}`);
    if (segment.includes("%")) throw new PolicyConfigError(field, `has "${segment}": request paths are decoded before they are matched, so write the decoded text`);
    if (/^\{.*newsletter.*\}$/i.test(segment) && segment !== "{newsletter}") {
      throw new PolicyConfigError(field, `has "${segment}": the newsletter a path names is the parameter {newsletter} (reach and permissions are checked on it)`);
    }
  }
}

/** Validates one operation and compiles it over the configured budgets. */
export function compileOperation(entry: OperationEntry, budgets: readonly BudgetSpec[]): CompiledOperation {
  // the policy's own copy, frozen through: what a host changes in its object (or in the config's
  // `operations` view) after `defineConfig` changes no decision (found by a review: a list bound
  // or a daily cap set to undefined there switched it off), and what is checked is what is used
  const spec = frozenData(entry.spec);
  const field = entry.field;
  checkShape(spec, field);
  const needs = spec.needs === undefined ? undefined : parseRequirement(spec.needs);
  if (needs === null) throw new PolicyConfigError(`${field}.needs`, `must read "<family>: <level>" or "account: read"; got ${String(spec.needs)}`);
  const segments = spec.path === "/" ? [] : spec.path.slice(1).split("/");
  checkSegments(segments, `${field}.path`);
  const newsletterAt = segments.indexOf("{newsletter}");
  const isWrite = spec.method !== "GET";
  const wanted = new Set(["general", ...(spec.budgets ?? []), ...(isWrite ? ["write"] : [])]);
  for (const name of wanted) {
    if (!budgets.some((b) => b.name === name)) {
      throw new PolicyConfigError(`${field}.budgets`, `names "${name}", which is not a configured budget`);
    }
  }
  const own = budgets.filter((b) => wanted.has(b.name));
  checkCap(spec, field, needs, segments, newsletterAt);
  checkDetails(spec, field);
  return Object.freeze({
    spec,
    id: spec.id,
    needs: needs ?? undefined,
    need: needs === undefined ? undefined : requirementParts(needs),
    budgets: own,
    policyHeader: policyHeader(own),
    isWrite,
    segments: segments.map((s) => (s.startsWith("{") && s.endsWith("}") ? null : s)),
    newsletterAt,
    reachWhenNamed: needs === undefined && newsletterAt < 0 && !isBuiltIn(entry),
    expandPaths: Object.keys(spec.expand ?? {}),
  });
}

/** A deep copy of plain data (arrays, objects by their own enumerable keys, and values), frozen through. */
function frozenData<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return Object.freeze(value.map((item) => frozenData(item))) as T;
  const copy: Record<string, unknown> = {};
  // defined, not assigned: a key named __proto__ stays an own key
  for (const key of Object.keys(value)) Object.defineProperty(copy, key, { value: frozenData((value as Record<string, unknown>)[key]), enumerable: true, writable: true, configurable: true });
  return Object.freeze(copy) as T;
}
