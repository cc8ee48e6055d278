/**
 * What may this credential do on one newsletter? Every catalogue operation run through the plan
 * stage (the same route, reach, permission, filter and expand rules `evaluate` applies), without
 * counting anything: for a UI that greys out buttons, and for support staff answering "why 403?".
 */
import { resolveConfig, type PolicyConfig } from "./config.js";
import type { CompiledOperation } from "./operations.js";
import type { PolicyOptions } from "./config-types.js";
import { assertCredential, assertRoles } from "./host-input.js";
import { PolicyConfigError } from "./errors.js";
import type { Method } from "./catalogue.js";
import { plan, type Plan } from "./plan.js";
import type { PolicyRequest, Requirement, Roles, Who } from "./types.js";

/** Why an operation would be refused, as `evaluate` would answer it (status, code and message). */
export interface PermittedRefusal {
  /** 403 `insufficient_scope` or 404 `not_found` (the newsletter is not reached); typed as the plan's refusals are (400 included). */
  readonly status: 400 | 403 | 404;
  readonly code: "invalid_request" | "insufficient_scope" | "not_found";
  /** The row of spec §7's `insufficient_scope` table (1, 2 or 3), for a 403. */
  readonly case?: 1 | 2 | 3 | 4 | 5 | 6 | 7;
  /** The permission the operation needs, for a 403. */
  readonly needs?: Requirement;
  /** The error message the refusal would carry (paths show their templates, e.g. `/articles/{article}/send`). */
  readonly message: string;
}

/** One catalogue operation and whether this credential may call it. */
export interface PermittedOperation {
  /** The operation's id, e.g. `subscribers.list`. */
  readonly id: string;
  readonly method: Method;
  /** The path template, e.g. `/newsletters/{newsletter}/subscribers`. */
  readonly path: string;
  readonly allowed: boolean;
  /** Present exactly when `allowed` is false. */
  readonly refusal?: PermittedRefusal;
}

/**
 * The values a credential may send for one query filter: `"any"` when the filter is not restricted
 * for it, otherwise the list of values (empty: it may not use the filter at all, spec §7 #5).
 */
export type FilterValues = "any" | readonly string[];

/** What {@link permitted} returns. */
export interface Permissions {
  /** The newsletter asked about. */
  readonly newsletter: string;
  /**
   * `reader` when the credential is read-only there (spec §5.7: it sees the newsletter as a reader
   * does), `full` when it holds `write` in some family; undefined when it does not reach the newsletter.
   */
  readonly view: "reader" | "full" | undefined;
  /** Every operation of the config's catalogue, in catalogue order. */
  readonly operations: readonly PermittedOperation[];
  /** Per allowed operation with query filters: per filter, the values it may send (spec §7 #4–#6). */
  readonly filters: Readonly<Record<string, Readonly<Record<string, FilterValues>>>>;
  /** Per allowed operation with `expand` paths: the paths it may expand (spec §7 #7). */
  readonly expand: Readonly<Record<string, readonly string[]>>;
}

/** A filter value that no catalogue lists: sending it is allowed only when the filter is unrestricted. */
const PROBE = "__newsletter_policy_permitted_probe__";

/**
 * A request that matches `op` on `newsletter` and is valid input: parameters keep their template
 * names (`{article}` cannot equal a literal segment, so routing picks `op`), lists get their minimum.
 */
function probe(op: CompiledOperation, newsletter: string, query: string): PolicyRequest {
  const path = op.spec.path
    .split("/")
    .map((segment) => (segment === "{newsletter}" ? encodeURIComponent(newsletter) : segment.startsWith("{") ? encodeURIComponent(segment) : segment))
    .join("/");
  const list = op.spec.list;
  return {
    method: op.spec.method,
    path: query === "" ? path : `${path}?${query}`,
    newsletter,
    ...(list === undefined ? {} : { body: { [list.field]: Array.from({ length: Math.max(1, list.min) }, (_, i) => `probe_${i}@example.com`) /* one address each: a valid address and a valid id */ } }),
  };
}

function refusalOf(planned: Plan): PermittedRefusal | undefined {
  const r = planned.refusal;
  if (r === undefined) return undefined;
  return {
    status: r.status,
    code: r.code,
    ...(r.reason.rule === "insufficient_scope" ? { case: r.reason.case, needs: r.reason.needed } : {}),
    message: r.message,
  };
}

/**
 * `roles` with the newsletter's role read once: every operation of one answer is decided with the
 * same role, also when a role function answers differently while a role changes (it was asked once
 * per operation, and one answer mixed `view: "full"` with operations refused as not reached: found by
 * a permissions review).
 */
function roleAskedOnce(roles: Roles, newsletter: string): Roles {
  if (typeof roles !== "function") return roles;
  let asked = false;
  let role: string | undefined;
  return (id) => {
    if (id !== newsletter) return roles(id);
    if (!asked) {
      role = roles(id);
      asked = true;
    }
    return role;
  };
}

/**
 * Lists what a credential may do on one newsletter: every operation of the catalogue with allowed
 * or the refusal it would get, the filter values and expand paths it may use, and its view. Pure:
 * it charges nothing and reads no counters, and it agrees with what `evaluate` answers for the
 * same credential and roles whenever no budget or daily cap is spent.
 *
 * @param who - the credential and its owner's current roles (the role cap of spec §5.4 applies).
 * @param newsletter - the newsletter to list; operations without one (`GET /me`, `GET /rate-limit`) are listed too.
 * @param config - a config from `defineConfig`, or options (default: the spec's numbers and catalogue).
 * @returns `{ newsletter, view, operations, filters, expand }`.
 * @throws PolicyConfigError for host mistakes only: invalid config, credential or roles.
 * @example
 * const { operations, filters } = permitted({ credential, roles: { nl_1: "editor" } }, "nl_1");
 * const canSend = operations.find((op) => op.id === "articles.send")!.allowed;
 * filters["articles.list"]?.status; // ["sent"] for a read-only key, "any" otherwise
 */
export function permitted(who: Who, newsletter: string, config?: PolicyConfig | PolicyOptions): Permissions {
  const resolved = resolveConfig(config);
  assertCredential(who?.credential);
  assertRoles(who.roles);
  // the host names the newsletter it asks about: anything but an id is its mistake (undefined asked about nothing; found by a review)
  if (typeof newsletter !== "string" || newsletter === "") throw new PolicyConfigError("newsletter", `must be a newsletter id (a non-empty string); got ${newsletter === "" ? "an empty string" : typeof newsletter}`);
  const { credential } = who;
  const roles = roleAskedOnce(who.roles, newsletter);
  const ask = (op: CompiledOperation, query = ""): Plan => plan(resolved, probe(op, newsletter, query), credential, roles);

  let view: Permissions["view"];
  const operations: PermittedOperation[] = [];
  const filters: Record<string, Record<string, FilterValues>> = {};
  const expand: Record<string, readonly string[]> = {};
  for (const op of resolved.operations) {
    const planned = ask(op);
    view ??= planned.view;
    const refusal = refusalOf(planned);
    const { id, method, path } = op.spec;
    operations.push(refusal === undefined ? { id, method, path, allowed: true } : { id, method, path, allowed: false, refusal });
    if (refusal !== undefined) continue;
    // Filters and expand paths: ask the plan stage about each value, so the rules stay in one place.
    const filterRules = op.spec.filters;
    if (filterRules !== undefined) {
      const mine: Record<string, FilterValues> = {};
      for (const [name, rule] of Object.entries(filterRules)) {
        const sends = (value: string) => ask(op, `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).refusal === undefined;
        mine[name] = sends(PROBE) ? "any" : rule.reader.filter(sends);
      }
      filters[id] = mine;
    }
    if (op.expandPaths.length > 0) {
      expand[id] = op.expandPaths.filter((p) => ask(op, `expand=${encodeURIComponent(p)}`).refusal === undefined);
    }
  }
  return { newsletter, view, operations, filters, expand };
}
