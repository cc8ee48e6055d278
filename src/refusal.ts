/**
 * A refusal the plan decides before counting, and its makers: each tagged with the check of
 * DESIGN §1 that refused (decide.ts places it in the order).
 */
import * as say from "./messages.js";
import type { Reason, Requirement } from "./types.js";

/** The checks of DESIGN §1, in order (decide.ts walks them). */
export type Check = "route" | "budgets" | "reach" | "permission" | "input" | "idempotency" | "cap";

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

/** DESIGN §8: the credential does not reach the newsletter (not minted for it, or no role there now). */
export function notFound(newsletter: string | undefined, cause: "not_granted" | "no_role" | "unknown_role" | "unresolved", named: boolean): Refusal {
  // DESIGN §8: one answer for every cause, so that existence does not leak. The message names the
  // newsletter only when the client named it (in the path): one the host resolved from an article,
  // subscriber or tag id is not the client's to learn. Naming it told a key of nl_2 that article
  // a_9 exists and belongs to nl_1, where an unknown id read "The resource was not found." (found
  // by an adapter review). `reason` names it either way, for the host's logs.
  return { check: "reach", status: 404, code: "not_found", message: say.noReach(named ? newsletter : undefined), reason: { rule: "no_reach", newsletter, cause } };
}

/** A 403 of spec §7's table: its case number, what was needed and what the credential holds. */
export interface ScopeFacts {
  readonly specCase: 1 | 2 | 3 | 4 | 5 | 6 | 7;
  readonly needed: Requirement;
  readonly message: string;
  readonly held: string[];
  readonly param?: string;
  readonly allowedValues?: readonly string[];
}

/** spec §7: a 403 `insufficient_scope`. */
export function insufficientScope({ specCase, needed, message, held, param, allowedValues }: ScopeFacts): Refusal {
  // absent fields left out by assignment (object spreads were a tenth of a 403's time)
  const reason: { -readonly [K in keyof ScopeReason]: ScopeReason[K] } = { rule: "insufficient_scope", case: specCase, needed, held };
  const refusal: { -readonly [K in keyof Refusal]: Refusal[K] } = { check: "permission", status: 403, code: "insufficient_scope", message, reason };
  if (param !== undefined) {
    refusal.param = param;
    reason.param = param;
  }
  // spec §7: allowed_values is left out when there is nothing the credential may send
  if (allowedValues !== undefined && allowedValues.length !== 0) refusal.allowedValues = allowedValues;
  return refusal;
}

/** The reason of a 403. */
type ScopeReason = Extract<Reason, { rule: "insufficient_scope" }>;

/** DESIGN §10: bad input from the request, naming the field. */
export function invalid(param: string, detail: string): Refusal {
  return { check: "input", status: 400, code: "invalid_request", message: say.invalidInput(param, detail), param, reason: { rule: "invalid_input", param, detail } };
}

/**
 * DESIGN §10: a descriptor field that cannot be read or has the wrong type, refused at `check`: the
 * route when the method or path cannot be read, reach for the newsletter it is judged by, else input.
 */
export function malformed(param: string, detail: string, check: "route" | "reach" | "input"): Refusal {
  return { check, status: 400, code: "invalid_request", message: say.malformedRequest(param, detail), param, reason: { rule: "malformed_request", param, detail } };
}

/**
 * A refusal handed out more than once (a plan or a refusal kept for the next request), frozen with
 * its reason, the lists in it and its allowed values: no decision can change another's.
 */
export function frozenRefusal(refusal: Refusal): Refusal {
  const reason = refusal.reason as unknown as Record<string, unknown>;
  for (const key of Object.keys(reason)) if (Array.isArray(reason[key])) Object.freeze(reason[key]);
  Object.freeze(reason);
  if (refusal.allowedValues !== undefined) Object.freeze(refusal.allowedValues);
  return Object.freeze(refusal);
}
