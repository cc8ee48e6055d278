/**
 * The public vocabulary of newsletter-policy: who asks, what they ask, and what the policy answers.
 * Everything here is plain data; nothing in this file runs.
 */

/** The six permission families of spec §2. */
export type Family = "content" | "audience" | "sending" | "insights" | "settings" | "webhooks";

/** A family's level (spec §2): `write` includes `read`. */
export type Level = "none" | "read" | "write";

/** A level that grants something. */
export type GrantedLevel = Exclude<Level, "none">;

/** The textual form of a newsletter permission, spec §2: `<family>: <level>`. */
export type Permission = `${Family}: ${GrantedLevel}`;

/** What an operation may need: a newsletter permission, or `account: read` (spec §2). */
export type Requirement = Permission | "account: read";

/** The three budgets of spec §8, in policy order. Hosts may configure more. */
export type BuiltInBudget = "general" | "audience" | "write";

/** The daily caps of spec §8. */
export type CapName = "dispatch" | "testSend";

/** Per-family levels, as selected when a key is minted or an OAuth app is authorised. */
export type Grants = Partial<Record<Family, Level>>;

/**
 * A credential: an API key or an OAuth authorisation (spec §5).
 * Its budgets are per credential (`id`), never per IP address.
 */
export interface Credential {
  /** Stable id of the key or authorisation; budgets and the test-send cap are counted per id. */
  readonly id: string;
  readonly kind: "api_key" | "oauth";
  /** Per-newsletter permissions as selected when minted or authorised. */
  readonly newsletters: Readonly<Record<string, Grants>>;
  /** `account: read` (spec §2): `GET /me` and the account collections. */
  readonly account?: boolean;
}

/**
 * The credential owner's current role on each newsletter: `owner`, `admin`, `editor`, or a role of
 * the config. A newsletter without a role is not reached (`not_found`).
 */
export type Roles = Readonly<Record<string, string>> | ((newsletter: string) => string | undefined);

/** Who is asking: the credential and its owner's current roles. */
export interface Who {
  readonly credential: Credential;
  readonly roles: Roles;
  /**
   * The limits of this credential's and newsletter's plan: budgets and caps in the config's shape,
   * every field optional (a field left out keeps the config's value). Keep one object per plan: it
   * is validated once and remembered by identity. See docs/operating.md.
   */
  readonly limits?: Limits;
}

/**
 * The request descriptor the host builds from the HTTP request. Untrusted: any shape is accepted and
 * a malformed one is refused with `invalid_request`, never thrown.
 */
export interface PolicyRequest {
  /** HTTP method, case-insensitive. */
  method: string;
  /** Request path; a query string is allowed, e.g. `/newsletters/nl_1/subscribers?limit=100`. */
  path: string;
  /**
   * Parsed query (the framework's `req.query`): when given, used instead of the path's query string.
   * Pass the object your handlers read. (The adapters, whose handlers may read the parsed object or
   * the raw URL, have both judged: each name's values from either.) An Idempotency-Key is bound to
   * the query as judged: this object (with an adapter's descriptor, and what the path's query
   * string adds to it).
   */
  query?: Readonly<Record<string, string | readonly string[]>>;
  /** The `Idempotency-Key` header. */
  idempotencyKey?: string;
  /** The parsed JSON body (test-send `to`, tagging `subscribers`). */
  body?: unknown;
  /** The newsletter that owns the resource, for paths without `{newsletter}`. */
  newsletter?: string;
  /** The host's request id; `req_` is prefixed when missing. */
  requestId?: string;
}

/**
 * Every error code the policy answers with: `invalid_request` (400), `insufficient_scope` (403),
 * `not_found` (404), `conflict` (409, an Idempotency-Key reused on a different request),
 * `rate_limited` (429, a budget or a daily cap) and `service_unavailable` (503, the store failed).
 */
export type ErrorCode = "invalid_request" | "insufficient_scope" | "not_found" | "conflict" | "rate_limited" | "service_unavailable";

/** The status of a refusal: 400, 403, 404, 409, 429 or 503, with the {@link ErrorCode}s above. */
export type RefusalStatus = 400 | 403 | 404 | 409 | 429 | 503;

/** The error object of spec §2, exactly its fields. */
export interface ErrorObject {
  code: ErrorCode;
  message: string;
  request_id: string;
  docs_url: string;
  param?: string;
  allowed_values?: string[];
}

/** One budget's figures, as in the `RateLimit-*` headers and `GET /rate-limit`. */
export interface BudgetFigures {
  /** Size of the budget. */
  limit: number;
  /** Requests left in the current window. */
  remaining: number;
  /** Whole seconds until the window refills, at least 1. */
  reset: number;
}

/** The JSON body of `GET /rate-limit`: the same numbers as the headers (spec §4). */
export interface RateLimitStatus {
  /** Every budget by name: the spec's three always (a config cannot remove them), then the host's. */
  budgets: { general: BudgetFigures; audience: BudgetFigures; write: BudgetFigures; [name: string]: BudgetFigures };
}

/** A budget's figures as a decision saw them, for logs. */
export interface BudgetReport extends BudgetFigures {
  name: string;
  /** Window size in seconds. */
  window: number;
}

/**
 * Why a decision came out as it did: data a host can log. `rule` says which rule decided; the
 * other fields carry the figures of that rule.
 */
export type Reason =
  /**
   * `replay: true`: the request retried an `Idempotency-Key` already recorded for this very request
   * (same method, path, query and body). Answer it from the result you stored for the first one,
   * and do not execute it again (do not send twice); it was counted toward no daily cap again.
   */
  | { rule: "allowed"; replay?: true }
  | NoReplay<{ rule: "malformed_request"; param: string; detail: string }>
  | NoReplay<{ rule: "unknown_operation"; method: string; path: string }>
  | NoReplay<{ rule: "budget_spent"; budget: string; spent: BudgetReport[] }>
  | NoReplay<{
      rule: "no_reach";
      newsletter: string | undefined;
      cause: "not_granted" | "no_role" | "unknown_role" | "unresolved";
    }>
  | NoReplay<{
      rule: "insufficient_scope";
      /** The row of spec §7's `insufficient_scope` table. */
      case: 1 | 2 | 3 | 4 | 5 | 6 | 7;
      needed: Requirement;
      held: string[];
      param?: string;
    }>
  | NoReplay<{ rule: "invalid_input"; param: string; detail: string }>
  | NoReplay<{ rule: "idempotency_conflict"; key: string }>
  | NoReplay<{ rule: "daily_cap"; cap: CapName; limit: number; count: number; resetAt: number }>
  | NoReplay<{ rule: "store_unavailable"; failOpen: boolean; error: string }>;

/**
 * A reason that is never a replay: `replay` is there to be read on any reason
 * (`decision.reason.replay`, DESIGN §7), undefined on all but an allowed one.
 */
export type NoReplay<T> = T & { replay?: undefined };

/** What a request was charged: budget names and cap names (DESIGN: the decision's own lists). */
export interface Charged {
  budgets: string[];
  caps: string[];
}

/** A token that lets `release` uncount one daily-cap charge. */
export interface ReleaseTicket {
  readonly cap: CapName;
  /** Store key of the cap (without the day). */
  readonly key: string;
  /** The day index the charge was counted in. */
  readonly day: number;
  /** The charge's member in that day's set. */
  readonly member: string;
  /** The idempotency record that carries the charge, if the request had a key. */
  readonly idempotencyKey?: string;
}

interface DecisionBase {
  /** Headers to send, named exactly `RateLimit-Policy`, `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` and, on 429, `Retry-After`. */
  headers: Record<string, string>;
  /** The matched operation's id, e.g. `subscribers.list`. */
  operation?: string;
  /** `reader`: a read-only credential; the host hides unpublished content (spec §5.7). */
  view?: "reader" | "full";
  /** The newsletter the request was decided on. */
  newsletter?: string;
  charged: Charged;
  /** `req_…` */
  requestId: string;
  /** Why: which rule decided, with its figures. */
  reason: Reason;
  /**
   * Set when the main store failed and the insurance store decided, with every limit multiplied by
   * its share (`createPolicy({ insurance })`). Absent otherwise.
   */
  degraded?: true;
}

/** An allowed request: go on, and set `headers` on the response. */
export interface AllowedDecision extends DecisionBase {
  allowed: true;
  status: 200;
  body?: undefined;
  /** Present when the request counted toward a daily cap: pass the decision to `release` if the send then fails. */
  release?: ReleaseTicket;
}

/** A refused request: answer with `status`, `headers` and `body`. */
export interface RefusedDecision extends DecisionBase {
  allowed: false;
  status: RefusalStatus;
  body: { error: ErrorObject };
  release?: undefined;
}

/** The policy's answer for one request. */
export type Decision = AllowedDecision | RefusedDecision;

/** A budget's size and window (spec §8). */
export interface BudgetOptions {
  /** Requests per window, a whole number ≥ 1. */
  limit: number;
  /** Window in whole seconds ≥ 1. */
  window: number;
}

/**
 * The limits of one plan: the same shape as the config's `budgets` and `caps`, every field optional.
 * A field left out keeps the config's value. Only budgets the config has can be given.
 *
 * @example
 * const paid: Limits = { budgets: { audience: { limit: 240 } }, caps: { dispatch: { limit: 100 } } };
 */
export interface Limits {
  /** Budget sizes and windows (window in whole seconds), by budget name. */
  readonly budgets?: Readonly<Record<string, Readonly<Partial<BudgetOptions>>>>;
  /** Daily caps: dispatches per newsletter, test sends per credential. */
  readonly caps?: { readonly dispatch?: { readonly limit?: number }; readonly testSend?: { readonly limit?: number } };
}
