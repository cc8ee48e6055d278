/**
 * Stage one, plan: everything that can be decided without counters (DESIGN §1 checks route, reach,
 * permission and input; decide.ts holds the whole order). Gives either a refusal, tagged with the
 * check that made it, or a go-ahead carrying the idempotency key and daily cap the store must check.
 */
import { BOUNDS } from "./bounds.js";
import type { CompiledConfig } from "./config.js";
import type { BudgetSpec } from "./config-types.js";
import { requestFingerprint, type CanonicalFailure } from "./fingerprint.js";
import * as say from "./messages.js";
import type { CompiledOperation } from "./operations.js";
import { checkExpand, checkFilters, checkNeeds } from "./permission-checks.js";
import { effectiveCode, effectiveLevels, grantedLevel, isReadOnly, levelsCode } from "./permissions.js";
import { assertRole, hostError } from "./host-input.js";
import { frozenRefusal, insufficientScope, invalid, malformed, notFound, type Refusal } from "./refusal.js";
import { readList } from "./body-list.js";
import { queryValues } from "./query.js";
import { normaliseRequest, type NormalRequest } from "./request.js";
import { route } from "./router.js";
import type { CapName, Credential, Grants, Level, Reason, Roles } from "./types.js";


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
   * What the Idempotency-Key is bound to: method, path, query, body and a newsletter the path does not name (`METHOD /path <hash>`, see
   * fingerprint.ts); `""` when the request carries no key to record.
   */
  readonly fingerprint: string;
  readonly cap: CapName | undefined;
  readonly requestId: string | undefined;
  /** The owner's role on the newsletter as the roles gave it, when it is a name (a derived request id reads it). */
  readonly role: string | undefined;
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** Why a keyed write's body cannot be bound to its Idempotency-Key (fingerprint.ts), as its 400 says. */
const UNKEYABLE: Readonly<Record<CanonicalFailure["problem"], string>> = {
  bounds: `must be at most ${BOUNDS.keyedBodyValues.toLocaleString("en")} JSON values, ${BOUNDS.keyedBodyLength.toLocaleString("en")} characters and ${BOUNDS.keyedBodyDepth} arrays or objects deep (never holding itself) to be bound to an Idempotency-Key`,
  unreadable: "could not be read to be bound to an Idempotency-Key: pass plain data (a getter or a Proxy that throws is not read)",
  not_data: "must be JSON data (objects, arrays, strings, numbers, booleans, null), dates or bytes to be bound to an Idempotency-Key, not a Map, Set or class instance",
};
/**
 * A positive whole number a JS integer holds exactly: leading zeros, then 1 to 15 digits, the first
 * not 0 (`/^0*[1-9][0-9]{0,14}$/`, read by hand: a regular expression run was 1.5 % of a check).
 * The spec sets no maximum (§8).
 */
export function isLimit(text: unknown): boolean {
  if (typeof text !== "string") return false; // a query value is always text; anything else is not a limit
  let i = 0;
  while (i < text.length && text.charCodeAt(i) === 48) i++;
  const digits = text.length - i;
  if (digits < 1 || digits > 15) return false;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function roleOf(roles: Roles, newsletter: string): unknown {
  const fromFunction = typeof roles === "function";
  let role: unknown;
  try {
    role = fromFunction ? roles(newsletter) : Object.hasOwn(roles, newsletter) ? roles[newsletter] : undefined;
  } catch (error) {
    throw hostError("roles", error);
  }
  assertRole(role, newsletter, fromFunction);
  return role;
}

/** DESIGN §10: bad input answers invalid_request naming the field. */
function checkInput(op: CompiledOperation, request: NormalRequest): Refusal | undefined {
  // a field that could not be judged (request.ts): its query reads as empty, so this comes first
  const problem = request.problem ?? request.newsletterProblem;
  if (problem !== undefined) return malformed(problem.param, problem.detail, "input");
  const limits = op.spec.paginated ? request.query.get("limit") : undefined;
  if (limits !== undefined && (limits.length !== 1 || !isLimit(limits[0]!))) return invalid("limit", "must be one positive whole number");
  const expand = queryValues(request.query, "expand");
  const unknown = expand.length === 0 ? undefined : expand.find((p) => !op.expandPaths.includes(p));
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

/**
 * The plan, built in one place and one shape (the hot path stays monomorphic): the budgets and
 * `RateLimit-Policy` of the operation, or of the fallback when no operation was found.
 */
function planOf(
  config: CompiledConfig,
  op: CompiledOperation | undefined,
  requestId: string | undefined,
  newsletter: string | undefined,
  view: Plan["view"],
  refusal: Refusal | undefined,
  idempotencyKey?: string,
  fingerprint = "",
  role?: string,
): Plan {
  return {
    operation: op,
    budgets: op === undefined ? config.fallback.budgets : op.budgets,
    policyHeader: op === undefined ? config.fallback.policyHeader : op.policyHeader,
    newsletter,
    view,
    refusal,
    idempotencyKey,
    fingerprint,
    cap: op?.spec.cap,
    requestId,
    role,
  };
}

/**
 * The last input check, the Idempotency-Key of a write, once everything else passed. Only then is
 * the request fingerprinted (its body hashed), so requests without a key pay nothing for it.
 */
function withIdempotencyKey(config: CompiledConfig, op: CompiledOperation, request: NormalRequest, newsletter: string | undefined, view: Plan["view"], refusal: Refusal | undefined, role?: string): Plan {
  if (refusal !== undefined || !op.isWrite || request.idempotencyKey === undefined) return planOf(config, op, request.requestId, newsletter, view, refusal, undefined, "", role);
  const key = request.idempotencyKey;
  if (typeof key !== "string" || !IDEMPOTENCY_KEY.test(key)) {
    return planOf(config, op, request.requestId, newsletter, view, invalid("Idempotency-Key", "must be 1 to 255 visible ASCII characters"), undefined, "", role);
  }
  const fingerprint = requestFingerprint(request.method, request.path, request.query, request.body, op.newsletterAt < 0 ? newsletter : undefined);
  if (typeof fingerprint !== "string") {
    return planOf(config, op, request.requestId, newsletter, view, invalid("body", UNKEYABLE[fingerprint.problem]), undefined, "", role);
  }
  return planOf(config, op, request.requestId, newsletter, view, undefined, key, fingerprint, role);
}

/** Reach (DESIGN §8: minted for the newsletter and a role there now), then permission and input. */
function planOnNewsletter(config: CompiledConfig, op: CompiledOperation, request: NormalRequest, credential: Credential, roles: Roles): Plan {
  const named = op.newsletterAt >= 0;
  const newsletter = named ? request.segments[op.newsletterAt] : request.newsletter;
  const id = request.requestId;
  // the newsletter the reach is judged by cannot be read: no reach can be told, so 400 at reach
  const unjudged = named ? undefined : request.newsletterProblem;
  if (unjudged !== undefined) return planOf(config, op, id, undefined, undefined, malformed(unjudged.param, unjudged.detail, "reach"));
  if (newsletter === undefined) return planOf(config, op, id, newsletter, undefined, notFound(undefined, "unresolved", named));
  const grants = Object.hasOwn(credential.newsletters, newsletter) ? credential.newsletters[newsletter] : undefined;
  if (typeof grants !== "object" || grants === null) return planOf(config, op, id, newsletter, undefined, notFound(newsletter, "not_granted", named));
  const role = roleOf(roles, newsletter);
  if (role === undefined || role === null) return planOf(config, op, id, newsletter, undefined, notFound(newsletter, "no_role", named));
  const cap = typeof role === "string" ? config.roles.get(role) : undefined;
  if (cap === undefined) return planOf(config, op, id, newsletter, undefined, notFound(newsletter, "unknown_role", named), undefined, "", typeof role === "string" ? role : undefined);

  const account = credential.account === true;
  // the levels as one number first: a plan handed out again needs no levels object
  const code = effectiveCode(grants, cap);
  const memo = lastPlan;
  if (
    memo.plan !== undefined &&
    memo.query === request.query &&
    memo.op === op &&
    memo.path === request.path &&
    memo.newsletter === newsletter &&
    memo.role === role &&
    memo.levels === code &&
    memo.account === account &&
    (memo.granted === undefined || memo.granted === neededGrant(op, grants)) &&
    plainRead(request)
  ) {
    return memo.plan;
  }
  // the plan's own read of the grants, which its key is then taken from: a grants object that reads
  // otherwise a second time (a getter, a Proxy) keeps its plan under what this read saw, never under
  // another credential's levels (found by a review: a plan stored under the first read's key was
  // handed to the next credential of those levels)
  const levels = effectiveLevels(grants, cap);
  const readOnly = isReadOnly(levels);
  const refusal =
    checkNeeds(op, request, newsletter, grants, role as string, levels) ??
    (readOnly ? checkFilters(op, request, newsletter, levels) : undefined) ??
    checkExpand(op, request, newsletter, levels, account) ??
    checkInput(op, request);
  const planned = withIdempotencyKey(config, op, request, newsletter, readOnly ? "reader" : "full", refusal === undefined ? undefined : frozenRefusal(refusal), role as string);
  if (plainRead(request)) {
    memo.plan = Object.freeze(planned);
    memo.query = request.query;
    memo.op = op;
    memo.path = request.path;
    memo.newsletter = newsletter;
    memo.role = role as string;
    memo.levels = levelsCode(levels);
    memo.account = account;
    memo.granted = refusal === undefined ? undefined : neededGrant(op, grants);
  }
  return planned;
}

/** The raw grant of the family `op` needs (spec §7 #2's message reads it); none for an operation that needs none or account access. */
function neededGrant(op: CompiledOperation, grants: Grants): Level {
  const need = op.need;
  return need === undefined || need.account ? "none" : grantedLevel(grants, need.family);
}

/**
 * A request whose plan is a function of its route, query, newsletter and the caller's levels alone:
 * no body, no Idempotency-Key, no host request id (each its own). Its query is the path's as read
 * (request.ts keeps each recent path's read, so the same path gives the same segments and query).
 */
function plainRead(request: NormalRequest): boolean {
  return request.body === undefined && request.idempotencyKey === undefined && request.requestId === undefined && request.problem === undefined && request.newsletterProblem === undefined;
}

/**
 * The last plan of a plain read ({@link plainRead}) and everything it was planned from: most
 * requests repeat the one before (the same route for many credentials of the same levels, a client
 * refused for want of a permission asking again), so its plan is handed out again, frozen with its
 * refusal, while every input the checks read is the same: the operation (routed by method and path;
 * an operation belongs to one config, limits give their own copies), the query as read (by
 * identity: request.ts keeps each recent path's read, so a query object, read afresh each time,
 * never matches), the path a refusal shows, the newsletter, the role (a derived request id and
 * spec §7 #2's message read it), the effective levels as one number, account access (an expand
 * path may need it) and, for a refusal, the raw grant of the family the operation needs (spec §7 #2
 * tells a grant the role caps from one never made; no other refusal reads a raw grant). test/properties/plan-memo.test.ts fails when any of these is left out.
 */
const lastPlan: {
  plan: Plan | undefined;
  query: ReadonlyMap<string, readonly string[]> | undefined;
  op: CompiledOperation | undefined;
  path: string | undefined;
  newsletter: string | undefined;
  role: string | undefined;
  levels: number;
  account: boolean;
  /** The raw grant of the family the operation needs when the plan refused (spec §7 #2's message reads it); undefined for an allowed plan. */
  granted: Level | undefined;
} = { plan: undefined, query: undefined, op: undefined, path: undefined, newsletter: undefined, role: undefined, levels: -1, account: false, granted: undefined };

/**
 * Plans one request: route → reach → permission → input limits (DESIGN §1; budgets, idempotency
 * and the daily cap are checked by the charge stage). Never throws for any request shape.
 */
export function plan(config: CompiledConfig, input: unknown, credential: Credential, roles: Roles): Plan {
  const request = normaliseRequest(input);
  // a method or path that cannot be read: no operation to charge, so the route's answer
  if (!("segments" in request)) return planOf(config, undefined, request.requestId, undefined, undefined, malformed(request.param, request.detail, "route"));
  const op = route(config.routes, request);
  if (op === undefined) {
    // DESIGN §11: unknown operations fail closed
    const reason: Reason = { rule: "unknown_operation", method: request.method, path: request.path.slice(0, 200) };
    const message = say.unknownOperation(request.method, request.path);
    return planOf(config, undefined, request.requestId, undefined, undefined, { check: "route", status: 404, code: "not_found", message, reason });
  }
  if (op.needs === "account: read") {
    if (credential.account === true) return withIdempotencyKey(config, op, request, undefined, undefined, checkInput(op, request));
    // spec §7 #3
    const message = say.lacksAccount(request.method, request.path);
    return planOf(config, op, request.requestId, undefined, undefined, insufficientScope({ specCase: 3, needed: "account: read", message, held: [], allowedValues: ["account: read"] }));
  }
  // a host's operation that needs nothing is on a newsletter where the request names one: a
  // credential that does not reach it is answered 404 (DESIGN §8; found by a black-box review: a
  // credential that reached no newsletter at all was let through DELETE /webhooks/{webhook})
  const onNewsletter = op.newsletterAt >= 0 || op.needs !== undefined || op.spec.cap !== undefined || (op.reachWhenNamed && (request.newsletter !== undefined || request.newsletterProblem !== undefined));
  if (!onNewsletter) return withIdempotencyKey(config, op, request, undefined, undefined, checkInput(op, request));
  // the request was read defensively; what throws from here is the host's credential (its grants)
  // or roles (roleOf names them): a PolicyConfigError naming it, never a bare TypeError
  try {
    return planOnNewsletter(config, op, request, credential, roles);
  } catch (error) {
    throw hostError("credential", error);
  }
}
