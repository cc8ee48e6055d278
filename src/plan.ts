/**
 * Stage one, plan: everything that can be decided without counters. Route, reach, permission and
 * input limits give either a refusal (still charged to the request's budgets when they have room)
 * or a go-ahead carrying the idempotency key and daily cap the charge stage must check.
 */
import type { BudgetSpec, CompiledOperation, CompiledConfig } from "./config.js";
import {
  effectiveLevels,
  grantedLevel,
  heldList,
  holds,
  isReadOnly,
  requirementParts,
  satisfies,
  type Effective,
} from "./permissions.js";
import { requestFingerprint } from "./fingerprint.js";
import { normaliseRequest, queryValues, readList, type NormalRequest } from "./request.js";
import type { CapName, Credential, Grants, Reason, Requirement, Roles } from "./types.js";

/** A refusal decided before counting: its status, error fields and reason. */
export interface Refusal {
  /**
   * `route`: the descriptor is malformed or names no operation. DESIGN §1 puts route before budgets,
   * so such a refusal stands whatever the counters say. `plan`: reach, permission or input, which
   * come after budgets.
   */
  readonly stage: "route" | "plan";
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

function route(config: CompiledConfig, request: NormalRequest): CompiledOperation | undefined {
  const candidates = config.routes.get(`${request.method} ${request.segments.length}`);
  if (candidates === undefined) return undefined;
  outer: for (const op of candidates) {
    for (let i = 0; i < op.segments.length; i++) {
      const literal = op.segments[i];
      if (literal !== null && literal !== request.segments[i]) continue outer;
    }
    return op;
  }
  return undefined;
}

function roleOf(roles: Roles, newsletter: string): unknown {
  if (typeof roles === "function") return roles(newsletter);
  return Object.hasOwn(roles, newsletter) ? roles[newsletter] : undefined;
}

function notFound(newsletter: string | undefined, cause: "not_granted" | "no_role" | "unknown_role" | "unresolved"): Refusal {
  // DESIGN §8: one answer for every cause, so that existence does not leak.
  return {
    stage: "plan",
    status: 404,
    code: "not_found",
    message: newsletter === undefined ? "The resource was not found." : `Newsletter "${newsletter}" was not found for this credential.`,
    reason: { rule: "no_reach", newsletter, cause },
  };
}

function held(levels: Effective): string {
  const list = heldList(levels);
  return list.length === 0 ? "nothing" : list.join(", ");
}

function scope(
  kase: 1 | 2 | 3 | 4 | 5 | 6 | 7,
  needed: Requirement,
  message: string,
  holds: string[],
  param?: string,
  allowedValues?: readonly string[],
): Refusal {
  return {
    stage: "plan",
    status: 403,
    code: "insufficient_scope",
    message,
    ...(param === undefined ? {} : { param }),
    // spec §7: allowed_values is left out when there is nothing the credential may send
    ...(allowedValues === undefined || allowedValues.length === 0 ? {} : { allowedValues }),
    reason: { rule: "insufficient_scope", case: kase, needed, held: holds, ...(param === undefined ? {} : { param }) },
  };
}

function invalid(param: string, detail: string): Refusal {
  return { stage: "plan", status: 400, code: "invalid_request", message: `${param} ${detail}.`, param, reason: { rule: "invalid_input", param, detail } };
}

/** spec §7 #1, #2: the operation's own permission. */
function checkNeeds(
  op: CompiledOperation,
  request: NormalRequest,
  newsletter: string,
  grants: Grants,
  role: string,
  levels: Effective,
): Refusal | undefined {
  if (op.needs === undefined) return undefined;
  const need = requirementParts(op.needs);
  if (need.account || satisfies(levels[need.family], need.level)) return undefined;
  const what = `${request.method} ${request.path} needs ${op.needs} on newsletter "${newsletter}"`;
  const granted = grantedLevel(grants, need.family);
  if (satisfies(granted, need.level)) {
    // spec §7 #2: minted with the family, capped by the owner's role now; show what it holds after the cap
    return scope(
      2,
      op.needs,
      `${what}. The credential was granted ${need.family}: ${granted}, but its owner's current role "${role}" caps it at ${need.family}: ${levels[need.family]}; after the cap it holds ${held(levels)} there.`,
      heldList(levels),
      undefined,
      [op.needs],
    );
  }
  return scope(1, op.needs, `${what}; this credential holds ${held(levels)} there.`, heldList(levels), undefined, [op.needs]);
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
    const instead = allowed.length === 0 ? `may not use ${name}` : `may use ${name}=${allowed.join(" or ")} only`;
    return scope(
      filters[name]!.specCase ?? (allowed.length === 0 ? 5 : 4),
      needed,
      `Filtering ${request.path} by ${name}=${refused} shows unpublished content and needs write in a family of newsletter "${newsletter}", such as ${needed}; this credential is read-only there and holds ${held(levels)}, so it ${instead}.`,
      heldList(levels),
      name,
      allowed,
    );
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
    return scope(
      7,
      paths[path]!,
      `expand=${path} on ${request.path} needs ${paths[path]} on newsletter "${newsletter}"; this credential holds ${held(levels)} there.`,
      heldList(levels),
      "expand",
      allowed,
    );
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

/** The plan's fields that are known before the last stage; one shape, so the hot path stays monomorphic. */
interface Draft {
  operation: CompiledOperation | undefined;
  budgets: readonly BudgetSpec[];
  policyHeader: string;
  newsletter: string | undefined;
  view: "reader" | "full" | undefined;
  requestId: string | undefined;
}

function finish(draft: Draft, refusal: Refusal | undefined, idempotencyKey: string | undefined, fingerprint = ""): Plan {
  return {
    operation: draft.operation,
    budgets: draft.budgets,
    policyHeader: draft.policyHeader,
    newsletter: draft.newsletter,
    view: draft.view,
    refusal,
    idempotencyKey,
    fingerprint,
    cap: draft.operation?.spec.cap,
    requestId: draft.requestId,
  };
}

/**
 * The last input check, the Idempotency-Key of a write, once everything else passed. Only then is
 * the request fingerprinted (its body hashed), so requests without a key pay nothing for it.
 */
function settle(op: CompiledOperation, request: NormalRequest, draft: Draft, refusal: Refusal | undefined): Plan {
  if (refusal !== undefined || !op.isWrite || request.idempotencyKey === undefined) return finish(draft, refusal, undefined);
  const key = request.idempotencyKey;
  if (typeof key !== "string" || !IDEMPOTENCY_KEY.test(key)) {
    return finish(draft, invalid("Idempotency-Key", "must be 1 to 255 visible ASCII characters"), undefined);
  }
  return finish(draft, undefined, key, requestFingerprint(request.method, request.path, request.query, request.body));
}

/**
 * Plans one request: route → reach → permission → input limits (DESIGN §1; budgets, idempotency
 * and the daily cap are checked by the charge stage). Never throws for any request shape.
 */
export function plan(config: CompiledConfig, input: unknown, credential: Credential, roles: Roles): Plan {
  const request = normaliseRequest(input);
  if (!("segments" in request)) {
    const draft: Draft = { operation: undefined, budgets: config.fallback.budgets, policyHeader: config.fallback.policyHeader, newsletter: undefined, view: undefined, requestId: undefined };
    return finish(
      draft,
      {
        stage: "route",
        status: 400,
        code: "invalid_request",
        message: `The request's ${request.param} ${request.detail}.`,
        param: request.param,
        reason: { rule: "malformed_request", param: request.param, detail: request.detail },
      },
      undefined,
    );
  }
  const op = route(config, request);
  const draft: Draft = {
    operation: op,
    budgets: op === undefined ? config.fallback.budgets : op.budgets,
    policyHeader: op === undefined ? config.fallback.policyHeader : op.policyHeader,
    newsletter: undefined,
    view: undefined,
    requestId: request.requestId,
  };
  if (op === undefined) {
    // DESIGN §11: unknown operations fail closed
    return finish(
      draft,
      {
        stage: "route",
        status: 404,
        code: "not_found",
        message: `No operation matches ${request.method} ${request.path}.`,
        reason: { rule: "unknown_operation", method: request.method, path: request.path.slice(0, 200) },
      },
      undefined,
    );
  }

  if (op.needs === "account: read") {
    if (credential.account !== true) {
      // spec §7 #3
      const message = `${request.method} ${request.path} needs account: read; this credential does not hold it anywhere it reaches.`;
      return finish(draft, scope(3, "account: read", message, [], undefined, ["account: read"]), undefined);
    }
    return settle(op, request, draft, checkInput(op, request));
  }

  const scoped = op.newsletterAt >= 0 || op.needs !== undefined || op.spec.cap !== undefined;
  if (!scoped) return settle(op, request, draft, checkInput(op, request));

  // DESIGN §8: reach = minted for the newsletter and a role there now
  const newsletter = op.newsletterAt >= 0 ? request.segments[op.newsletterAt] : request.newsletter;
  draft.newsletter = newsletter;
  if (newsletter === undefined) return finish(draft, notFound(undefined, "unresolved"), undefined);
  const grants = Object.hasOwn(credential.newsletters, newsletter) ? credential.newsletters[newsletter] : undefined;
  if (typeof grants !== "object" || grants === null) return finish(draft, notFound(newsletter, "not_granted"), undefined);
  const role = roleOf(roles, newsletter);
  if (role === undefined || role === null) return finish(draft, notFound(newsletter, "no_role"), undefined);
  const cap = typeof role === "string" ? config.roles.get(role) : undefined;
  if (cap === undefined) return finish(draft, notFound(newsletter, "unknown_role"), undefined);

  const levels = effectiveLevels(grants, cap);
  const readOnly = isReadOnly(levels);
  draft.view = readOnly ? "reader" : "full";
  const refusal =
    checkNeeds(op, request, newsletter, grants, role as string, levels) ??
    (readOnly ? checkFilters(op, request, newsletter, levels) : undefined) ??
    checkExpand(op, request, newsletter, levels, credential.account === true) ??
    checkInput(op, request);
  return settle(op, request, draft, refusal);
}
