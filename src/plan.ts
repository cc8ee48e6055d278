/**
 * Stage one, plan: everything that can be decided without counters (DESIGN §1 checks route, reach,
 * permission and input; decide.ts holds the whole order). Gives either a refusal, tagged with the
 * check that made it, or a go-ahead carrying the idempotency key and daily cap the store must check.
 */
import type { BudgetSpec, CompiledConfig } from "./config.js";
import type { Check } from "./decide.js";
import { requestFingerprint } from "./fingerprint.js";
import * as say from "./messages.js";
import type { CompiledOperation } from "./operations.js";
import { effectiveLevels, grantedLevel, heldPermissions, holds, isReadOnly, requirementParts, satisfies, type Effective } from "./permissions.js";
import { normaliseRequest, queryValues, readList, type NormalRequest } from "./request.js";
import { route } from "./router.js";
import type { CapName, Credential, Grants, Reason, Requirement, Roles } from "./types.js";

/** A refusal decided before counting: the check that made it, its status, error fields and reason. */
export interface Refusal {
  /** Which of DESIGN §1's checks refused; decide.ts places it in the order. */
  readonly check: Exclude<Check, "budgets" | "idempotency" | "cap">;
  readonly status: 400 | 403 | 404;
  readonly code: "invalid_request" | "insufficient_scope" | "not_found";
  readonly message: string;
  readonly param?: string;
  readonly allowedValues?: readonly string[];
  readonly reason: Reason;
}

/** The plan for one request: what to charge, and what to answer if the budgets have room. */
export interface Plan {
  readonly operation: CompiledOperation | undefined;
  readonly budgets: readonly BudgetSpec[];
  readonly policyHeader: string;
  readonly newsletter: string | undefined;
  readonly view: "reader" | "full" | undefined;
  /** Set: refuse with this once the budgets are charged. Unset: go on to idempotency and cap. */
  readonly refusal: Refusal | undefined;
  /** The Idempotency-Key of a write, validated. */
  readonly idempotencyKey: string | undefined;
  /**
   * What the Idempotency-Key is bound to: method, path, query and body (`METHOD /path <hash>`, see
   * fingerprint.ts); `""` when the request carries no key to record.
   */
  readonly fingerprint: string;
  readonly cap: CapName | undefined;
  readonly requestId: string | undefined;
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;
// A positive whole number a JS integer holds exactly (15 digits); the spec sets no maximum (§8).
const LIMIT = /^0*[1-9][0-9]{0,14}$/;

function roleOf(roles: Roles, newsletter: string): unknown {
  if (typeof roles === "function") return roles(newsletter);
  return Object.hasOwn(roles, newsletter) ? roles[newsletter] : undefined;
}

function notFound(newsletter: string | undefined, cause: "not_granted" | "no_role" | "unknown_role" | "unresolved"): Refusal {
  // DESIGN §8: one answer for every cause, so that existence does not leak.
  return { check: "reach", status: 404, code: "not_found", message: say.noReach(newsletter), reason: { rule: "no_reach", newsletter, cause } };
}

/** A 403 of spec §7's table: its case number, what was needed and what the credential holds. */
interface ScopeFacts {
  readonly specCase: 1 | 2 | 3 | 4 | 5 | 6 | 7;
  readonly needed: Requirement;
  readonly message: string;
  readonly held: string[];
  readonly param?: string;
  readonly allowedValues?: readonly string[];
}

function insufficientScope({ specCase, needed, message, held, param, allowedValues }: ScopeFacts): Refusal {
  return {
    check: "permission",
    status: 403,
    code: "insufficient_scope",
    message,
    ...(param === undefined ? {} : { param }),
    // spec §7: allowed_values is left out when there is nothing the credential may send
    ...(allowedValues === undefined || allowedValues.length === 0 ? {} : { allowedValues }),
    reason: { rule: "insufficient_scope", case: specCase, needed, held, ...(param === undefined ? {} : { param }) },
  };
}

function invalid(param: string, detail: string): Refusal {
  return { check: "input", status: 400, code: "invalid_request", message: say.invalidInput(param, detail), param, reason: { rule: "invalid_input", param, detail } };
}

/** spec §7 #1, #2: the operation's own permission. */
function checkNeeds(op: CompiledOperation, request: NormalRequest, newsletter: string, grants: Grants, role: string, levels: Effective): Refusal | undefined {
  if (op.needs === undefined) return undefined;
  const need = requirementParts(op.needs);
  if (need.account || satisfies(levels[need.family], need.level)) return undefined;
  const held = heldPermissions(levels);
  const facts: say.Needed = { method: request.method, path: request.path, needs: op.needs, newsletter, held };
  const granted = grantedLevel(grants, need.family);
  if (satisfies(granted, need.level)) {
    // spec §7 #2: minted with the family, capped by the owner's role now; show what it holds after the cap
    const message = say.cappedByRole(facts, need.family, granted, role, levels[need.family]);
    return insufficientScope({ specCase: 2, needed: op.needs, message, held, allowedValues: [op.needs] });
  }
  return insufficientScope({ specCase: 1, needed: op.needs, message: say.lacksPermission(facts), held, allowedValues: [op.needs] });
}

/** spec §5.7 and §7 #4–#6: what a read-only credential may filter by. */
function checkFilters(op: CompiledOperation, request: NormalRequest, newsletter: string, levels: Effective): Refusal | undefined {
  const filters = op.spec.filters;
  if (filters === undefined) return undefined;
  for (const name of Object.keys(filters)) {
    const values = queryValues(request.query, name);
    if (values.length === 0) continue;
    const allowed = filters[name]!.reader;
    const refused = values.find((v) => !allowed.includes(v));
    if (refused === undefined) continue;
    // spec §5.7: write in any family lifts the restriction; name the operation's own family
    const need = op.needs === undefined ? undefined : requirementParts(op.needs);
    const needed: Requirement = need !== undefined && !need.account ? `${need.family}: write` : "content: write";
    const held = heldPermissions(levels);
    const message = say.filterNeedsWrite(request.path, name, refused, allowed, needed, newsletter, held);
    return insufficientScope({ specCase: filters[name]!.specCase ?? (allowed.length === 0 ? 5 : 4), needed, message, held, param: name, allowedValues: allowed });
  }
  return undefined;
}

/** spec §7 #7: an expand path that needs a family (or `account: read`) the credential lacks. */
function checkExpand(op: CompiledOperation, request: NormalRequest, newsletter: string, levels: Effective, account: boolean): Refusal | undefined {
  const paths = op.spec.expand;
  if (paths === undefined) return undefined;
  for (const path of queryValues(request.query, "expand")) {
    if (!Object.hasOwn(paths, path)) continue; // unknown paths are bad input, judged after permissions
    if (holds(paths[path]!, levels, account)) continue;
    const allowed = op.expandPaths.filter((p) => holds(paths[p]!, levels, account));
    const held = heldPermissions(levels);
    const message = say.expandNeedsPermission(path, request.path, paths[path]!, newsletter, held);
    return insufficientScope({ specCase: 7, needed: paths[path]!, message, held, param: "expand", allowedValues: allowed });
  }
  return undefined;
}

/** DESIGN §10: bad input answers invalid_request naming the field. */
function checkInput(op: CompiledOperation, request: NormalRequest): Refusal | undefined {
  if (op.spec.paginated && request.query.has("limit")) {
    const values = request.query.get("limit")!;
    if (values.length !== 1 || !LIMIT.test(values[0]!)) return invalid("limit", "must be one positive whole number");
  }
  const expand = queryValues(request.query, "expand");
  const unknown = expand.find((p) => !op.expandPaths.includes(p));
  if (unknown !== undefined) {
    const known = op.expandPaths.length === 0 ? "this operation expands nothing" : `known paths: ${op.expandPaths.join(", ")}`;
    return invalid("expand", `names an unknown path "${unknown.slice(0, 64)}" (${known})`);
  }
  const list = op.spec.list;
  if (list !== undefined) {
    // spec §8 other constants: at most 5 addresses, at most 500 subscribers; read defensively (request.ts)
    const read = readList(request.body, list);
    if ("detail" in read) return invalid(list.field, read.detail);
  }
  return undefined;
}

/** The plan's fields known once the request is routed; one shape, so the hot path stays monomorphic. */
interface Routed {
  operation: CompiledOperation | undefined;
  budgets: readonly BudgetSpec[];
  policyHeader: string;
  newsletter: string | undefined;
  view: "reader" | "full" | undefined;
  requestId: string | undefined;
}

function planOf(routed: Routed, refusal: Refusal | undefined, idempotencyKey: string | undefined, fingerprint = ""): Plan {
  return {
    operation: routed.operation,
    budgets: routed.budgets,
    policyHeader: routed.policyHeader,
    newsletter: routed.newsletter,
    view: routed.view,
    refusal,
    idempotencyKey,
    fingerprint,
    cap: routed.operation?.spec.cap,
    requestId: routed.requestId,
  };
}

/**
 * The last input check, the Idempotency-Key of a write, once everything else passed. Only then is
 * the request fingerprinted (its body hashed), so requests without a key pay nothing for it.
 */
function withIdempotencyKey(op: CompiledOperation, request: NormalRequest, routed: Routed, refusal: Refusal | undefined): Plan {
  if (refusal !== undefined || !op.isWrite || request.idempotencyKey === undefined) return planOf(routed, refusal, undefined);
  const key = request.idempotencyKey;
  if (typeof key !== "string" || !IDEMPOTENCY_KEY.test(key)) {
    return planOf(routed, invalid("Idempotency-Key", "must be 1 to 255 visible ASCII characters"), undefined);
  }
  return planOf(routed, undefined, key, requestFingerprint(request.method, request.path, request.query, request.body));
}

/** Reach (DESIGN §8: minted for the newsletter and a role there now), then permission and input. */
function planOnNewsletter(config: CompiledConfig, op: CompiledOperation, request: NormalRequest, routed: Routed, credential: Credential, roles: Roles): Plan {
  const newsletter = op.newsletterAt >= 0 ? request.segments[op.newsletterAt] : request.newsletter;
  routed.newsletter = newsletter;
  if (newsletter === undefined) return planOf(routed, notFound(undefined, "unresolved"), undefined);
  const grants = Object.hasOwn(credential.newsletters, newsletter) ? credential.newsletters[newsletter] : undefined;
  if (typeof grants !== "object" || grants === null) return planOf(routed, notFound(newsletter, "not_granted"), undefined);
  const role = roleOf(roles, newsletter);
  if (role === undefined || role === null) return planOf(routed, notFound(newsletter, "no_role"), undefined);
  const cap = typeof role === "string" ? config.roles.get(role) : undefined;
  if (cap === undefined) return planOf(routed, notFound(newsletter, "unknown_role"), undefined);

  const levels = effectiveLevels(grants, cap);
  const readOnly = isReadOnly(levels);
  routed.view = readOnly ? "reader" : "full";
  const refusal =
    checkNeeds(op, request, newsletter, grants, role as string, levels) ??
    (readOnly ? checkFilters(op, request, newsletter, levels) : undefined) ??
    checkExpand(op, request, newsletter, levels, credential.account === true) ??
    checkInput(op, request);
  return withIdempotencyKey(op, request, routed, refusal);
}

/**
 * Plans one request: route → reach → permission → input limits (DESIGN §1; budgets, idempotency
 * and the daily cap are checked by the charge stage). Never throws for any request shape.
 */
export function plan(config: CompiledConfig, input: unknown, credential: Credential, roles: Roles): Plan {
  const request = normaliseRequest(input);
  if (!("segments" in request)) {
    const routed: Routed = { operation: undefined, budgets: config.fallback.budgets, policyHeader: config.fallback.policyHeader, newsletter: undefined, view: undefined, requestId: undefined };
    const reason: Reason = { rule: "malformed_request", param: request.param, detail: request.detail };
    return planOf(routed, { check: "route", status: 400, code: "invalid_request", message: say.malformedRequest(request.param, request.detail), param: request.param, reason }, undefined);
  }
  const op = route(config.routes, request);
  const routed: Routed = {
    operation: op,
    budgets: op === undefined ? config.fallback.budgets : op.budgets,
    policyHeader: op === undefined ? config.fallback.policyHeader : op.policyHeader,
    newsletter: undefined,
    view: undefined,
    requestId: request.requestId,
  };
  if (op === undefined) {
    // DESIGN §11: unknown operations fail closed
    const reason: Reason = { rule: "unknown_operation", method: request.method, path: request.path.slice(0, 200) };
    return planOf(routed, { check: "route", status: 404, code: "not_found", message: say.unknownOperation(request.method, request.path), reason }, undefined);
  }
  if (op.needs === "account: read") {
    if (credential.account === true) return withIdempotencyKey(op, request, routed, checkInput(op, request));
    // spec §7 #3
    const message = say.lacksAccount(request.method, request.path);
    return planOf(routed, insufficientScope({ specCase: 3, needed: "account: read", message, held: [], allowedValues: ["account: read"] }), undefined);
  }
  const onNewsletter = op.newsletterAt >= 0 || op.needs !== undefined || op.spec.cap !== undefined;
  if (!onNewsletter) return withIdempotencyKey(op, request, routed, checkInput(op, request));
  return planOnNewsletter(config, op, request, routed, credential, roles);
}
