/**
 * Compiling the operation catalogue: the defaults merged with the host's operations, each validated
 * and compiled into what routing and planning read (its budgets, `RateLimit-Policy` header, path
 * segments and the position of `{newsletter}`).
 */
import { defaultOperations, type Method, type OperationSpec } from "./catalogue.js";
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
  readonly expandPaths: readonly string[];
}

/** An operation to compile, and how its field is named in errors. */
export interface OperationEntry {
  readonly spec: OperationSpec;
  readonly field: string;
}

const METHODS: readonly Method[] = ["GET", "POST", "PUT", "PATCH", "DELETE"];
const OPERATION_KEYS = ["id", "method", "path", "needs", "budgets", "cap", "filters", "expand", "paginated", "list"] as const;

/** The `RateLimit-Policy` header of a list of budgets. */
export function policyHeader(budgets: readonly BudgetSpec[]): string {
  // spec §8: each as a quoted name, q=<limit>, w=<window seconds>, separated by semicolons
  return budgets.map((b) => `"${b.name}";q=${b.limit};w=${b.window}`).join(", ");
}

/**
 * The catalogue in force: an operation with a built-in's id replaces it (DESIGN §9: the unstated
 * permissions are configurable); any other id adds an operation.
 */
export function operationEntries(operations: unknown): OperationEntry[] {
  if (operations !== undefined && !Array.isArray(operations)) throw new PolicyConfigError("operations", "must be an array of operations");
  const given = ((operations as OperationSpec[] | undefined) ?? []).map((spec, i) => ({ spec, field: `operations[${i}]` }));
  const builtInIds = new Set(defaultOperations.map((op) => op.id));
  const replaced = new Map(given.filter((g) => isRecord(g.spec) && builtInIds.has(g.spec.id)).map((g) => [g.spec.id, g]));
  return [
    ...defaultOperations.map((spec, i) => replaced.get(spec.id) ?? { spec, field: `defaultOperations[${i}]` }),
    ...given.filter((g) => !replaced.has(g.spec?.id) || replaced.get(g.spec.id) !== g),
  ];
}

function checkShape(spec: OperationSpec, field: string): void {
  if (!isRecord(spec)) throw new PolicyConfigError(field, "must be an operation object");
  knownKeys(spec as unknown as Record<string, unknown>, field, OPERATION_KEYS);
  if (typeof spec.id !== "string" || spec.id === "") throw new PolicyConfigError(`${field}.id`, "must be a non-empty string");
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
  for (const [path, need] of Object.entries(spec.expand ?? {})) {
    if (parseRequirement(need) === null) throw new PolicyConfigError(`${field}.expand.${path}`, "must be a permission");
  }
  for (const [name, rule] of Object.entries(spec.filters ?? {})) {
    if (!isRecord(rule) || !Array.isArray(rule.reader) || rule.reader.some((v) => typeof v !== "string")) {
      throw new PolicyConfigError(`${field}.filters.${name}.reader`, "must be an array of strings");
    }
    if (rule.specCase !== undefined && rule.specCase !== 4 && rule.specCase !== 5 && rule.specCase !== 6) {
      throw new PolicyConfigError(`${field}.filters.${name}.specCase`, "must be 4, 5 or 6 (spec §7's insufficient_scope rows)");
    }
  }
  if (spec.list !== undefined) {
    if (!isRecord(spec.list) || typeof spec.list.field !== "string") throw new PolicyConfigError(`${field}.list.field`, "must be a string");
    const min = wholeNumber(spec.list.min, `${field}.list.min`, 0);
    wholeNumber(spec.list.max, `${field}.list.max`, Math.max(min, 1));
  }
}

/**
 * A template's segments are what a request's decoded segments can equal: no empty one, no `.` or
 * `..`, no query or fragment, no `/`-breaking or control characters; a parameter is exactly
 * `{name}`. Anything else could never match, and the operation would be refused as unknown.
 */
function checkSegments(segments: readonly string[], field: string): void {
  for (const segment of segments) {
    if (segment === "") throw new PolicyConfigError(field, "has an empty segment");
    if (segment === "." || segment === "..") throw new PolicyConfigError(field, `has a "${segment}" segment, which no request path keeps`);
    // eslint-disable-next-line no-control-regex
    if (/[?#\\\u0000-\u001f\u007f]/.test(segment)) throw new PolicyConfigError(field, "must be a path only: no query (?), fragment (#), backslash or control character");
    if ((segment.includes("{") || segment.includes("}")) && !/^\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(segment)) {
      throw new PolicyConfigError(field, `has a segment "${segment}" that is neither a literal nor a whole {parameter}`);
    }
  }
}

/** Validates one operation and compiles it over the configured budgets. */
export function compileOperation({ spec, field }: OperationEntry, budgets: readonly BudgetSpec[]): CompiledOperation {
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
    expandPaths: Object.keys(spec.expand ?? {}),
  });
}
