/**
 * fast-check arbitraries for newsletter-policy: credentials, roles, configs, requests and whole
 * traces (hundreds of requests, the clock moving, roles changing mid-trace). Hosts use them to
 * property-test their own integration; the library's own invariants are written over them.
 */
import fc from "fast-check";
import { defaultOperations, type OperationSpec } from "../catalogue.js";
import type { PolicyOptions } from "../config.js";
import { FAMILIES, LEVELS } from "../permissions.js";
import type { Credential, Family, Grants, Level, PolicyRequest } from "../types.js";

/** Newsletter ids the arbitraries grant and ask for. */
export const NEWSLETTER_IDS = ["nl_1", "nl_2", "nl_3"] as const;

/**
 * Ids that name properties of `Object.prototype`. They are asked for but never granted by these
 * arbitraries, so a request naming one must never be reached (`not_found`).
 */
export const PROTOTYPE_NAMES = [
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "isPrototypeOf",
  "__defineGetter__",
  "propertyIsEnumerable",
] as const;

/** The built-in roles plus the one {@link arbConfig} adds (`analyst`) and one no config knows (`ghost`). */
export const ROLE_NAMES = ["owner", "admin", "editor", "analyst", "ghost"] as const;

/** Operations {@link arbConfig} adds, so that every family (settings and webhooks too) and a host budget are exercised. */
export const EXTRA_OPERATIONS: readonly OperationSpec[] = [
  { id: "settings.get", method: "GET", path: "/newsletters/{newsletter}/settings", needs: "settings: read" },
  { id: "settings.update", method: "PATCH", path: "/newsletters/{newsletter}/settings", needs: "settings: write" },
  { id: "webhooks.list", method: "GET", path: "/newsletters/{newsletter}/webhooks", needs: "webhooks: read" },
  { id: "webhooks.create", method: "POST", path: "/newsletters/{newsletter}/webhooks", needs: "webhooks: write" },
  { id: "sending.stats", method: "GET", path: "/newsletters/{newsletter}/sending-stats", needs: "sending: read" },
  { id: "insights.annotate", method: "POST", path: "/newsletters/{newsletter}/annotations", needs: "insights: write" },
  { id: "exports.create", method: "POST", path: "/newsletters/{newsletter}/exports", needs: "audience: read", budgets: ["exports"] },
];

/** A level: `none`, `read` or `write`. */
export const arbLevel: fc.Arbitrary<Level> = fc.constantFrom(...LEVELS);

/** A family of spec §2. */
export const arbFamily: fc.Arbitrary<Family> = fc.constantFrom(...FAMILIES);

/**
 * Per-family grants as selected when a key is minted; families may be left out.
 *
 * @example
 * fc.assert(fc.property(arbGrants(), (grants) => typeof grants === "object"));
 */
export function arbGrants(options: { readOnly?: boolean } = {}): fc.Arbitrary<Grants> {
  const levels: Level[] = options.readOnly ? ["none", "read", "read"] : ["none", "read", "read", "write", "write", "write"];
  // a family is left out one time in four (left out = none)
  const level = fc.oneof({ weight: 1, arbitrary: fc.constant(undefined) }, { weight: 3, arbitrary: fc.constantFrom(...levels) });
  return fc.tuple(...FAMILIES.map((f) => level.map((l) => [f, l] as const))).map((entries) => {
    const grants: Grants = {};
    for (const [f, l] of entries) if (l !== undefined) grants[f] = l;
    return grants;
  });
}

/** Builds an object whose keys are own data properties, even `__proto__`. */
function own<V>(entries: readonly (readonly [string, V])[]): Record<string, V> {
  return Object.fromEntries(entries) as Record<string, V>;
}

/** Options of {@link arbCredential}. */
export interface CredentialArbitraryOptions {
  /** The credential's id. Default: `key_1`…`key_3`. */
  id?: fc.Arbitrary<string>;
  /** Newsletters it may be granted. Default {@link NEWSLETTER_IDS}. */
  newsletters?: readonly string[];
}

/**
 * A credential (API key or OAuth) granted on a subset of the newsletters, with or without
 * `account: read`.
 *
 * @param options - `id` and the `newsletters` to draw grants from (default {@link NEWSLETTER_IDS}).
 * @returns an arbitrary of {@link Credential}; grants are own properties of a plain object.
 * @example
 * fc.assert(fc.property(arbCredential(), (credential) => {
 *   const { decision } = evaluate({ method: "GET", path: "/me" }, { credential, roles: {}, usage: emptyUsage(), now: 0 });
 *   return decision.status === (credential.account ? 200 : 403);
 * }));
 */
export function arbCredential(options: CredentialArbitraryOptions = {}): fc.Arbitrary<Credential> {
  const ids = options.newsletters ?? NEWSLETTER_IDS;
  return fc
    .record({
      id: options.id ?? fc.constantFrom("key_1", "key_2", "key_3"),
      kind: fc.constantFrom<Credential["kind"]>("api_key", "oauth"),
      // most newsletters granted, so that traces reach past 404 and spend budgets and caps
      // one credential in three is read-only (spec §5.7): it meets the reader filters
      grants: fc.nat({ max: 2 }).chain((mode) =>
        fc.tuple(...ids.map((id) => fc.option(arbGrants({ readOnly: mode === 0 }).map((g) => [id, g] as const), { freq: 5, nil: undefined }))),
      ),
      account: fc.boolean(),
    })
    .map(({ id, kind, grants, account }) => ({ id, kind, newsletters: own(grants.filter((g) => g !== undefined)), account }));
}

/**
 * The credential owner's current roles: a role (possibly one no config knows) on some newsletters.
 *
 * @param newsletters - the newsletters that may carry a role (default {@link NEWSLETTER_IDS}).
 * @returns an arbitrary of a plain roles object; newsletters left out have no role (not reached).
 * @example
 * fc.assert(fc.property(arbRoles(), (roles) => !Object.hasOwn(roles, "constructor")));
 */
export function arbRoles(newsletters: readonly string[] = NEWSLETTER_IDS): fc.Arbitrary<Record<string, string>> {
  return fc
    .tuple(...newsletters.map((id) => fc.option(arbRoleName().map((role) => [id, role] as const), { freq: 6, nil: undefined })))
    .map((entries) => own(entries.filter((e) => e !== undefined)));
}

/**
 * A role name: mostly `owner`, `admin`, `editor` or `analyst`, sometimes `ghost` (unknown to every config).
 *
 * @example
 * fc.sample(arbRoleName(), 3); // e.g. ["owner", "editor", "analyst"]
 */
export function arbRoleName(): fc.Arbitrary<string> {
  return fc.constantFrom("owner", "owner", "admin", "editor", "editor", "analyst", "ghost");
}

/** Options of {@link arbConfig}. */
export interface ConfigArbitraryOptions {
  /** `tight` (default): a few requests per few seconds, so that traces spend budgets; `roomy`: the spec's sizes or more. */
  budgets?: "tight" | "roomy";
  /** `tight` (default): daily caps of 1 to 4, so that traces reach them; `roomy`: up to the spec's 25 and 50. */
  caps?: "tight" | "roomy";
}

/**
 * Policy options: small budgets (so that traces spend them), small daily caps, an `analyst` role
 * with random caps, a host budget `exports`, the operations of {@link EXTRA_OPERATIONS}, either
 * unit for daily `Retry-After`, and a day start away from midnight UTC.
 *
 * @param options - `budgets` and `caps`: `tight` (default) or `roomy`.
 * @returns an arbitrary of {@link PolicyOptions}, always valid for `defineConfig`.
 * @example
 * fc.assert(fc.property(arbConfig(), (options) => defineConfig(options).budgets.length === 4));
 */
export function arbConfig(options: ConfigArbitraryOptions = {}): fc.Arbitrary<PolicyOptions> {
  const tight = options.budgets !== "roomy";
  const tightCaps = options.caps !== "roomy";
  const budget = (max: number) =>
    tight
      ? fc.record({ limit: fc.integer({ min: 1, max }), window: fc.integer({ min: 1, max: 4 }) })
      : fc.record({ limit: fc.integer({ min: 60, max: 1000 }), window: fc.integer({ min: 1, max: 60 }) });
  return fc.record({
    budgets: fc.record({ general: budget(50), audience: budget(8), write: budget(16), exports: budget(3) }),
    caps: fc.record({
      dispatch: fc.record({ limit: fc.integer({ min: 1, max: tightCaps ? 4 : 25 }) }),
      testSend: fc.record({ limit: fc.integer({ min: 1, max: tightCaps ? 4 : 50 }) }),
    }),
    roles: fc.record({ analyst: arbGrants() }),
    docsUrl: fc.constantFrom("https://docs.example.com/errors", "https://docs.newsletter.test/api/errors/"),
    dailyRetryAfter: fc.constantFrom<"hours" | "seconds">("hours", "seconds"),
    dayStartsAtUtcOffsetMinutes: fc.constantFrom(0, 0, 60, -300, 330, 1439, -1439),
    operations: fc.constant([...EXTRA_OPERATIONS]),
  });
}

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

function arbQuery(op: OperationSpec): fc.Arbitrary<Record<string, string[]>> {
  const parts: [string, fc.Arbitrary<string[]>, number][] = [];
  const some = (values: readonly string[]) => fc.array(fc.constantFrom(...values), { minLength: 1, maxLength: 2 });
  if (op.paginated) parts.push(["limit", fc.oneof({ weight: 8, arbitrary: fc.constantFrom<string[]>(["100"], ["5"]) }, { weight: 1, arbitrary: some(["100", "0", "abc", "1e3"]) }), 2]);
  // spec §7 #4–#7 filters and expansions: often, so that read-only credentials meet them
  for (const name of Object.keys(op.filters ?? {})) {
    const values = name === "status" ? ["sent", "sent", "draft", "scheduled", "sent,draft", " sent "] : name === "visibility" ? ["public", "public", "private", "public,private"] : ["t_1", "news"];
    parts.push([name, some(values), 2]);
  }
  if (op.expand) parts.push(["expand", some([...Object.keys(op.expand), ...Object.keys(op.expand), ...Object.keys(op.expand), "bogus", "subscriber,bogus"]), 2]);
  else parts.push(["expand", fc.constant(["subscriber"]), 40]);
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

function arbBody(op: OperationSpec): fc.Arbitrary<unknown> {
  const list = op.list;
  if (list === undefined) return fc.constantFrom<unknown>(undefined, undefined, {});
  const item = fc.constantFrom("a@example.com", "b@example.com", "s_1", "s_2");
  const sized = (n: number) => Array.from({ length: n }, (_, i) => `item_${i}`);
  return fc.oneof(
    { weight: 20, arbitrary: fc.array(item, { minLength: list.min, maxLength: Math.min(list.max, 5) }).map((v) => ({ [list.field]: v })) },
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
 * @param options - `operations` (default: the spec's catalogue plus {@link EXTRA_OPERATIONS}), `newsletters`.
 * @returns an arbitrary of {@link GeneratedRequest}.
 * @example
 * fc.assert(fc.property(arbCredential(), arbRoles(), arbRequest(), (credential, roles, { request }) => {
 *   const { decision } = evaluate(request, { credential, roles, usage: emptyUsage(), now: 0, config: { operations: [...EXTRA_OPERATIONS] } });
 *   return decision.headers["RateLimit-Policy"] !== undefined;
 * }));
 */
export function arbRequest(options: RequestArbitraryOptions = {}): fc.Arbitrary<GeneratedRequest> {
  const operations = options.operations ?? [...defaultOperations, ...EXTRA_OPERATIONS];
  const newsletters = options.newsletters ?? NEWSLETTER_IDS;
  // the operations with a daily cap are drawn more often, so that traces reach the caps
  const pick = fc.oneof(...operations.map((op) => ({ weight: op.cap === undefined ? 2 : 5, arbitrary: fc.constant(op) })));
  const known = pick.chain((op) => {
    const isWrite = op.method !== "GET";
    const segments = op.path.split("/").slice(1);
    const hasNewsletter = segments.includes("{newsletter}");
    return fc
      .record({
        ids: fc.tuple(...segments.map((s) => (s === "{newsletter}" ? arbNewsletterId(newsletters) : s.startsWith("{") ? fc.constantFrom(...OTHER_IDS) : fc.constant(s)))),
        owner: hasNewsletter ? fc.constant(undefined) : fc.option(arbNewsletterId(newsletters), { freq: 12, nil: undefined }),
        query: arbQuery(op),
        queryAsObject: fc.boolean(),
        body: arbBody(op),
        idempotencyKey: isWrite ? fc.constantFrom<unknown>(undefined, undefined, "k_1", "k_2", "k_3", "k_1", 42, "", "has space") : fc.constant(undefined),
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
  return fc.oneof({ weight: 19, arbitrary: known }, { weight: 1, arbitrary: unknown });
}

/**
 * An untrusted descriptor of any shape: `fc.anything()`, odd paths (`..`, `%2e%2e`, `%2F`, bad
 * percent-encoding, control characters, very long), odd methods, repeated and comma-separated query
 * values, wrong body and header types. None of them may make the policy throw.
 *
 * @returns an arbitrary of `unknown`.
 * @example
 * fc.assert(fc.property(arbUntrustedRequest(), (request) => {
 *   evaluate(request, { credential, roles, usage: emptyUsage(), now: 0 }); // never throws
 * }));
 */
export function arbUntrustedRequest(): fc.Arbitrary<unknown> {
  const oddPath = fc.oneof(
    fc.constantFrom(
      "",
      "/",
      "//",
      "newsletters/nl_1/subscribers",
      "/newsletters/../me",
      "/newsletters/nl_1/../nl_2/subscribers",
      "/newsletters/%2e%2e/subscribers",
      "/newsletters/nl_1%2Fx/subscribers",
      "/newsletters/nl%5C1/subscribers",
      "/newsletters/%E0%A4%A/subscribers",
      "/newsletters/%00/subscribers",
      "/newsletters/nl_1/subscribers?limit=%ZZ",
      "/newsletters/nl_1/articles?status=sent&status=draft",
      "/newsletters/nl_1/articles?status=sent,draft&tag=",
      "/newsletters/nl_1/insights?expand=subscriber&expand=subscriber",
      "/newsletters/__proto__/subscribers",
      "/newsletters/constructor/articles",
      "/newsletters/nl_1/subscribers#frag",
      "/me?",
      `/${"a/".repeat(3000)}`,
    ),
    fc.string({ unit: "binary", maxLength: 40 }).map((s) => `/${s}`),
    fc.webPath(),
  );
  const descriptor = fc.record(
    {
      method: fc.oneof(fc.constantFrom("GET", "get", "POST", "HEAD", "PATCH", "", "G E T", "GET\n", "DELETE"), fc.anything()),
      path: fc.oneof({ weight: 3, arbitrary: oddPath }, { weight: 1, arbitrary: fc.anything() }),
      query: fc.oneof(fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.array(fc.string()), fc.anything())), fc.anything()),
      idempotencyKey: fc.anything(),
      body: fc.anything(),
      newsletter: fc.oneof(fc.constantFrom("nl_1", "__proto__", "constructor", ""), fc.anything()),
      requestId: fc.oneof(fc.constantFrom("r_1", "req_1", "has space", ""), fc.anything()),
    },
    { requiredKeys: [] },
  );
  return fc.oneof({ weight: 3, arbitrary: descriptor }, { weight: 1, arbitrary: fc.anything() });
}

/** One step of a {@link Trace}. A `credential` index is taken modulo the number of credentials. */
export type TraceStep =
  /** The credential at `credential` (index into `Trace.credentials`) makes a request. */
  | { readonly kind: "request"; readonly credential: number; readonly request: PolicyRequest; readonly operation: string | undefined }
  /** The clock moves forward. */
  | { readonly kind: "advance"; readonly ms: number }
  /** The credential owner's role on a newsletter changes (`undefined`: the role is taken away). */
  | { readonly kind: "role"; readonly credential: number; readonly newsletter: string; readonly role: string | undefined }
  /** Release the cap charge of an earlier allowed send: the `pick`-th (mod count) decision that carries a ticket. */
  | { readonly kind: "release"; readonly pick: number }
  /** Read `GET /rate-limit` figures of a credential (stateful policies only; a no-op for the pure API). */
  | { readonly kind: "status"; readonly credential: number };

/** A whole session: config, start time, credentials with their owners' roles, and the steps. */
export interface Trace {
  readonly config: PolicyOptions;
  /** Milliseconds since the epoch at the first step. */
  readonly start: number;
  /** Distinct ids. */
  readonly credentials: readonly Credential[];
  /** `roles[i]`: the current roles of `credentials[i]`'s owner when the trace starts. */
  readonly roles: readonly Readonly<Record<string, string>>[];
  readonly steps: readonly TraceStep[];
}

/** Options of {@link arbTrace}. */
export interface TraceArbitraryOptions {
  /** Fewest and most steps. Default 20 to 300. */
  minSteps?: number;
  maxSteps?: number;
  /** Most credentials. Default 3. */
  maxCredentials?: number;
  /** The config. Default {@link arbConfig}. */
  config?: fc.Arbitrary<PolicyOptions>;
  /** `caps`: roomy budgets, and every granted newsletter grants `sending: write`, so that traces reach the daily caps. */
  focus?: "caps";
  /** Earliest and latest start. Default 2026-01-01 to 2030-01-01 UTC. */
  startMin?: number;
  startMax?: number;
}

/**
 * A trace: several credentials making hundreds of requests while the clock moves (by milliseconds,
 * by whole windows, by hours across day boundaries), roles change mid-trace, sends are released and
 * `GET /rate-limit` is read.
 *
 * @param options - `minSteps`/`maxSteps` (default 20/300), `maxCredentials` (default 3), `config`, `focus`, start range.
 * @returns an arbitrary of {@link Trace}.
 * @example
 * await fc.assert(fc.asyncProperty(arbTrace(), async (trace) => {
 *   const log = await runPolicyTrace(trace, new MemoryStore());
 *   return log.every((entry) => entry.kind !== "request" || entry.decision.headers["RateLimit-Limit"] !== undefined);
 * }));
 */
export function arbTrace(options: TraceArbitraryOptions = {}): fc.Arbitrary<Trace> {
  const maxCredentials = Math.max(1, options.maxCredentials ?? 3);
  const ids = Array.from({ length: maxCredentials }, (_, i) => `key_${i + 1}`);
  const sender = (grants: Grants): Grants => (options.focus === "caps" ? { ...grants, sending: "write" } : grants);
  const who = fc.nat({ max: maxCredentials - 1 });
  const step: fc.Arbitrary<TraceStep> = fc.oneof(
    { weight: 24, arbitrary: fc.tuple(who, arbRequest()).map(([credential, g]): TraceStep => ({ kind: "request", credential, request: g.request, operation: g.operation })) },
    {
      weight: 8,
      arbitrary: fc
        .oneof(
          { weight: 12, arbitrary: fc.integer({ min: 0, max: 1500 }) },
          { weight: 4, arbitrary: fc.integer({ min: 1, max: 6 }).map((s) => s * 1000) },
          { weight: 1, arbitrary: fc.integer({ min: 1, max: 14 }).map((h) => h * 3_600_000 + 17) },
        )
        .map((ms): TraceStep => ({ kind: "advance", ms })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(who, fc.constantFrom(...NEWSLETTER_IDS), fc.option(arbRoleName(), { nil: undefined, freq: 6 }))
        .map(([credential, newsletter, role]): TraceStep => ({ kind: "role", credential, newsletter, role })),
    },
    { weight: 1, arbitrary: fc.nat().map((pick): TraceStep => ({ kind: "release", pick })) },
    { weight: 1, arbitrary: who.map((credential): TraceStep => ({ kind: "status", credential })) },
  );
  // No chain: every part shrinks on its own, so counterexamples come out small.
  return fc
    .record({
      config: options.config ?? arbConfig(options.focus === "caps" ? { budgets: "roomy" } : {}),
      start: fc.integer({ min: options.startMin ?? Date.UTC(2026, 0, 1), max: options.startMax ?? Date.UTC(2030, 0, 1) }),
      people: fc.array(fc.tuple(arbCredential(), arbRoles()), { minLength: 1, maxLength: maxCredentials }),
      steps: fc.array(step, { minLength: options.minSteps ?? 20, maxLength: options.maxSteps ?? 300, size: "max" }),
    })
    .map(({ config, start, people, steps }): Trace => ({
      config,
      start,
      credentials: people.map(([credential], i) => ({
        ...credential,
        id: ids[i]!,
        newsletters: own(Object.entries(credential.newsletters).map(([n, g]) => [n, sender(g)] as const)),
      })),
      roles: people.map(([, roles]) => roles),
      steps,
    }));
}
