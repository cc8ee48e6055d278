/**
 * The arbitrary of well-formed requests: one built from a catalogue operation (ids, query, body and
 * `Idempotency-Key` of the right or wrong shape), and a few that match no operation.
 */
import fc from "fast-check";
import { defaultOperations, type OperationSpec } from "../../catalogue.js";
import type { PolicyRequest } from "../../types.js";
import { EXTRA_OPERATIONS, NEWSLETTER_IDS, PROTOTYPE_NAMES } from "./vocabulary.js";

/** A generated request with the operation it was built for (`undefined`: built to match nothing). */
export interface GeneratedRequest {
  readonly request: PolicyRequest;
  /** The catalogue operation the request was built from. */
  readonly operation: string | undefined;
}

/** Options of {@link arbRequest}. */
export interface RequestArbitraryOptions {
  /** Operations to build requests for. Default: the spec's catalogue plus {@link EXTRA_OPERATIONS}. */
  operations?: readonly OperationSpec[];
  /** Newsletter ids to ask for; prototype names and an unknown id are mixed in. Default {@link NEWSLETTER_IDS}. */
  newsletters?: readonly string[];
  /**
   * Requests that pass the input checks: a body of the right shape, an `Idempotency-Key` that is
   * valid or absent, one known value a query parameter (a reader may still be refused a filter:
   * 403), the owning newsletter given for paths without one, and a known operation, so
   * that they reach the budgets, the permissions and the daily caps (arbTrace's `focus: "caps"`).
   * Default false: wrong shapes are mixed in.
   */
  wellFormed?: boolean;
}

const OTHER_IDS = ["a_1", "a_2", "s_1", "t_1", "x y", "é"] as const;

function arbNewsletterId(newsletters: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 14, arbitrary: fc.constant(newsletters[0]!) },
    { weight: 10, arbitrary: fc.constantFrom(...newsletters) },
    { weight: 1, arbitrary: fc.constantFrom(...PROTOTYPE_NAMES, "nl_unknown") },
  );
}

function encodeSegment(id: string): string {
  return encodeURIComponent(id);
}

function arbQuery(op: OperationSpec, wellFormed: boolean): fc.Arbitrary<Record<string, string[]>> {
  const parts: [string, fc.Arbitrary<string[]>, number][] = [];
  // well formed: one value a parameter, of the names the spec gives (a reader may still be refused them: 403)
  const some = (values: readonly string[]) => (wellFormed ? fc.constantFrom(...values).map((v) => [v]) : fc.array(fc.constantFrom(...values), { minLength: 1, maxLength: 2 }));
  if (op.paginated) parts.push(["limit", wellFormed ? fc.constantFrom<string[]>(["100"], ["5"]) : fc.oneof({ weight: 8, arbitrary: fc.constantFrom<string[]>(["100"], ["5"]) }, { weight: 1, arbitrary: some(["100", "0", "abc", "1e3"]) }), 2]);
  // spec §7 #4–#7 filters and expansions: often, so that read-only credentials meet them
  for (const name of Object.keys(op.filters ?? {})) {
    const values = name === "status" ? ["sent", "sent", "draft", "scheduled", "sent,draft", " sent "] : name === "visibility" ? ["public", "public", "private", "public,private"] : ["t_1", "news"];
    parts.push([name, some(wellFormed ? values.filter((v) => /^\w+$/.test(v)) : values), 2]);
  }
  const paths = Object.keys(op.expand ?? {});
  if (paths.length > 0) parts.push(["expand", some(wellFormed ? paths : [...paths, ...paths, ...paths, "bogus", "subscriber,bogus"]), 2]);
  else if (!wellFormed) parts.push(["expand", fc.constant(["subscriber"]), 40]);
  // present once in `rarity` draws
  const sometimes = (name: string, values: fc.Arbitrary<string[]>, rarity: number) =>
    fc.oneof({ weight: rarity - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: values.map((v) => [name, v] as const) });
  return fc.tuple(...parts.map(([name, values, rarity]) => sometimes(name, values, rarity))).map((entries) => {
    const out: Record<string, string[]> = {};
    for (const entry of entries) if (entry !== undefined) out[entry[0]] = entry[1];
    return out;
  });
}

function queryString(query: Record<string, string[]>): string {
  const pairs: string[] = [];
  for (const [name, values] of Object.entries(query)) for (const v of values) pairs.push(`${encodeURIComponent(name)}=${encodeURIComponent(v)}`);
  return pairs.length === 0 ? "" : `?${pairs.join("&")}`;
}

function arbBody(op: OperationSpec, wellFormed: boolean): fc.Arbitrary<unknown> {
  const list = op.list;
  if (list === undefined) return fc.constantFrom<unknown>(undefined, undefined, {});
  // items of the list's kind (a test send's `to` takes addresses, a tagging's `subscribers` ids); the
  // other kind is mixed in rarely, as a wrong shape
  const [right, wrong] = list.items === "addresses" ? [["a@example.com", "b@example.com"], ["s_1", "s_2"]] : [["s_1", "s_2"], ["a@example.com", "b@example.com"]];
  const sized = (n: number) => Array.from({ length: n }, (_, i) => (list.items === "addresses" ? `item_${i}@example.com` : `item_${i}`));
  const valid = fc.array(fc.constantFrom(...right), { minLength: list.min, maxLength: Math.min(list.max, 5) }).map((v) => ({ [list.field]: v }));
  if (wellFormed) return valid;
  return fc.oneof(
    { weight: 20, arbitrary: valid },
    { weight: 1, arbitrary: fc.array(fc.constantFrom(...right, ...wrong), { minLength: 1, maxLength: 3 }).map((v) => ({ [list.field]: v })) },
    { weight: 1, arbitrary: fc.constantFrom(list.max, list.max + 1, list.max + 2, 0).map((n) => ({ [list.field]: sized(n) })) },
    { weight: 1, arbitrary: fc.constantFrom<unknown>(undefined, null, "to", { [list.field]: "a@example.com" }, { [list.field]: [1, 2] }, { [list.field]: [""] }, [list.field]) },
  );
}

/**
 * A request built from a catalogue operation: its path filled with newsletter ids (prototype names
 * and unknown ids mixed in), filters, `expand` and `limit` as a query string or a `query` object,
 * a body of the right or wrong shape, and for writes an `Idempotency-Key` from a small pool (or an
 * invalid one). A few requests match no operation.
 *
 * @param options - `operations` (default: the spec's catalogue plus {@link EXTRA_OPERATIONS}), `newsletters`, `wellFormed`.
 * @returns an arbitrary of {@link GeneratedRequest}.
 * @example
 * // EXTRA_OPERATIONS charge a host budget, `exports`, which the config must define
 * const config = defineConfig({ budgets: { exports: { limit: 10, window: 60 } }, operations: [...EXTRA_OPERATIONS], onWarning: () => {} });
 * fc.assert(fc.property(arbCredential(), arbRoles(), arbRequest(), (credential, roles, { request }) => {
 *   const { decision } = evaluate(request, { credential, roles, usage: emptyUsage(), now: 0, config });
 *   return decision.headers["RateLimit-Policy"] !== undefined;
 * }));
 */
export function arbRequest(options: RequestArbitraryOptions = {}): fc.Arbitrary<GeneratedRequest> {
  const operations = options.operations ?? [...defaultOperations, ...EXTRA_OPERATIONS];
  const newsletters = options.newsletters ?? NEWSLETTER_IDS;
  const wellFormed = options.wellFormed === true;
  const keys: readonly unknown[] = wellFormed ? [undefined, "k_1", "k_2", "k_3", "k_1"] : [undefined, undefined, "k_1", "k_2", "k_3", "k_1", 42, "", "has space"];
  // the operations with a daily cap are drawn more often, so that traces reach the caps
  const pick = fc.oneof(...operations.map((op) => ({ weight: op.cap === undefined ? 2 : 5, arbitrary: fc.constant(op) })));
  const known = pick.chain((op) => {
    const isWrite = op.method !== "GET";
    const segments = op.path.split("/").slice(1);
    const hasNewsletter = segments.includes("{newsletter}");
    return fc
      .record({
        ids: fc.tuple(...segments.map((s) => (s === "{newsletter}" ? arbNewsletterId(newsletters) : s.startsWith("{") ? fc.constantFrom(...OTHER_IDS) : fc.constant(s)))),
        owner: hasNewsletter ? fc.constant(undefined) : wellFormed ? arbNewsletterId(newsletters) : fc.option(arbNewsletterId(newsletters), { freq: 12, nil: undefined }),
        query: arbQuery(op, wellFormed),
        queryAsObject: fc.boolean(),
        body: arbBody(op, wellFormed),
        idempotencyKey: isWrite ? fc.constantFrom<unknown>(...keys) : fc.constant(undefined),
        lowerCase: fc.boolean(),
        trailingSlash: fc.boolean(),
      })
      .map(({ ids, owner, query, queryAsObject, body, idempotencyKey, lowerCase, trailingSlash }): GeneratedRequest => {
        const path = `/${ids.map((id, i) => (segments[i]!.startsWith("{") ? encodeSegment(id) : id)).join("/")}${trailingSlash ? "/" : ""}`;
        const request: PolicyRequest = {
          method: lowerCase ? op.method.toLowerCase() : op.method,
          path: queryAsObject ? path : path + queryString(query),
        };
        if (queryAsObject && Object.keys(query).length > 0) request.query = query;
        if (owner !== undefined) request.newsletter = owner;
        if (body !== undefined) request.body = body;
        if (idempotencyKey !== undefined) request.idempotencyKey = idempotencyKey as string;
        return { request, operation: op.id };
      });
  });
  const unknown = fc
    .record({
      method: fc.constantFrom("GET", "POST", "DELETE", "OPTIONS"),
      path: fc.constantFrom("/", "/newsletters", "/newsletters/nl_1", "/newsletters/nl_1/nothing", "/articles/a_1/unsend", "/rate-limit/extra"),
    })
    .map((request): GeneratedRequest => ({ request, operation: undefined }));
  return wellFormed ? known : fc.oneof({ weight: 19, arbitrary: known }, { weight: 1, arbitrary: unknown });
}
