/**
 * The one way from a framework's request to a decision, shared by every adapter (node:http,
 * Express, Fastify, Hono). An adapter only says where its framework keeps the method, path, parsed
 * query, headers and body, and how it answers; everything else is here. Imports no `node:` module,
 * so it runs on any runtime with the Fetch API.
 */
import { BOTH_QUERIES, judgedSegments } from "../request.js";
import { holdsOwnParameters } from "../query.js";
import { PolicyConfigError } from "../errors.js";
import type { Policy } from "../policy-types.js";
import { callHook, readOnly } from "../hooks.js";
import { errorBody } from "../render.js";
import * as say from "../messages.js";
import type { AllowedDecision, Decision, ErrorObject, PolicyRequest, RateLimitStatus, RefusedDecision, Who } from "../types.js";

/**
 * Options shared by every adapter's `newsletterPolicy(options)`.
 *
 * @typeParam Req - what the framework calls the request: Express/node `req`, Fastify `request`, Hono `c`.
 * @typeParam Replay - the framework's `onReplay`: `(decision, req, res)` for Express and node,
 *   `(decision, request, reply)` for Fastify, `(decision, c) => Response | void` for Hono.
 */
export interface AdapterOptions<Req, Replay> {
  /** From `createPolicy`. */
  policy: Policy;
  /**
   * The host's authentication: the credential and its owner's current roles. May return a Promise.
   * A throw (or rejection) is the host's answer, not a refusal: it goes to the framework's error
   * handling (Express `next(error)`, Fastify's error handler, Hono's `onError`; the node guard
   * rejects) and nothing is charged. Throw your 401 from here.
   */
  who: (req: Req) => Who | Promise<Who>;
  /**
   * The newsletter that owns the resource of a path without `{newsletter}` (`/articles/{article}/send`,
   * `/subscribers/{subscriber}`, `/tags/{tag}/subscribers`); `undefined` when unknown, which the
   * policy answers `not_found`. A throw goes to the framework's error handling, like `who`.
   * `target.segments` are the path's segments as the policy judges them and the framework's route
   * parameters hold them (percent-decoded): look the id up there, not in the raw URL. Not called
   * for a path the policy cannot read (400 naming `path`).
   */
  newsletter?: (req: Req, target: ResourceTarget) => string | undefined | Promise<string | undefined>;
  /**
   * Told of every decision, allowed or refused, for logs and metrics. It may be async. A throw or a
   * rejection never breaks the request (the decision has been charged by then, so the request goes
   * on, its headers set and a failed send released): it goes to `onHookError`.
   */
  onDecision?: (decision: Decision, req: Req) => void | Promise<void>;
  /** Told when `onDecision` throws or rejects (default: dropped); a throw from here is dropped too. */
  onHookError?: (error: unknown, decision: Decision, req: Req) => void;
  /**
   * An allowed replay (a write whose `Idempotency-Key` already counted): answer it from the stored
   * result instead of running the handler again. When it answers, the handler does not run; when it
   * does not (or is not given), the request goes on with the decision flagged (`isReplay(decision)`).
   */
  onReplay?: Replay;
}

/** The path a `newsletter` resolver is asked about, as the policy judges it. */
export interface ResourceTarget {
  /**
   * The path's segments, percent-decoded, without the query string (and, in Express, below the
   * mount point): `/articles/x%41/send` → `["articles", "xA", "send"]`.
   */
  readonly segments: readonly string[];
}

/** What an adapter reads off its framework's request. */
export interface Incoming {
  method: string;
  /** The path as routed, with its raw query string (judged with `query`, when that is given too). */
  path: string;
  /** The framework's parsed query, exactly as handlers get it; a value that is not a string or a list of strings is refused 400. */
  query?: unknown;
  /** A request header by lower-case name. */
  header: (name: string) => string | string[] | undefined;
  body?: unknown;
  /**
   * Reads the body, for an adapter that parses it itself (Hono): called after `who` and
   * `newsletter`, so that a request without a credential makes the server read nothing.
   */
  readBody?: () => Promise<unknown>;
}

/** What the adapter does next. */
export type Outcome =
  | { kind: "refuse"; decision: RefusedDecision; who: Who }
  | { kind: "status"; decision: AllowedDecision; who: Who }
  | { kind: "replay"; decision: AllowedDecision; who: Who }
  | { kind: "next"; decision: AllowedDecision; who: Who };

/**
 * Checks the adapter's options when it is made, so a host mistake fails at start-up, not on the
 * first request.
 *
 * @throws PolicyConfigError naming the option: `policy` that is not a policy, `who` that is not a
 *   function, or `newsletter`, `onDecision`, `onReplay`, `onHookError` given but not functions.
 */
export function assertOptions(options: unknown): void {
  if (typeof options !== "object" || options === null) throw new PolicyConfigError("options", "must be { policy, who, newsletter?, onDecision?, onReplay?, onHookError? }");
  const o = options as Record<string, unknown>;
  const policy = o.policy as Partial<Policy> | undefined;
  if (typeof policy?.check !== "function" || typeof policy.release !== "function" || typeof policy.status !== "function") {
    throw new PolicyConfigError("policy", "must be the policy createPolicy returned");
  }
  if (typeof o.who !== "function") throw new PolicyConfigError("who", "must be a function (req) => { credential, roles }, or a Promise of it");
  for (const name of ["newsletter", "onDecision", "onReplay", "onHookError"]) {
    if (o[name] !== undefined && typeof o[name] !== "function") throw new PolicyConfigError(name, "must be a function when given");
  }
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * A request target in absolute form (`http://host/path?query`, which a server must accept: RFC 9112
 * §3.2.2) as its origin form (`/path?query`), as Express and Hono hand a handler its path: node:http
 * and Fastify keep the whole target in `url`, and the policy refused it 400 (found by a new-user
 * review). The path is taken as written, from the first `/`, `?` or `#` after the authority (which
 * holds none of them): the policy judges it as it judges any path, dot segments and '#' included.
 */
export function originForm(target: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(target);
  if (scheme === null) return target;
  const rest = target.slice(scheme[0].length);
  const end = rest.search(/[/?#]/);
  if (end < 0) return "/";
  return rest[end] === "/" ? rest.slice(end) : `/${rest.slice(end)}`;
}

/**
 * Tells `onDecision`. The decision is charged by now, so a throw or a rejection must not stop the
 * request from going on (an unanswered rejection would end the process; a throw sent to the
 * framework's error handling would skip the headers and the release of a failed send).
 */
function tell<Req>(options: AdapterOptions<Req, unknown>, decision: Decision, req: Req): void {
  const { onDecision, onHookError } = options;
  if (onDecision === undefined) return;
  // frozen through first: the adapter answers from `decision` after this (see readOnly)
  readOnly(decision);
  callHook(() => onDecision(decision, req), onHookError === undefined ? undefined : (error) => onHookError(error, decision, req));
}

/**
 * Each request object's decisions, with the policy and the method and path each was made for. An
 * adapter that runs twice on one request (on the app and on a router, or on an app and a sub-app it
 * mounts) decides it once: a second run charged every budget and the daily cap again, and read a
 * first send with an Idempotency-Key as a replay of itself (found by an adapter review, Express and
 * Hono). Another policy decides afresh (its own budgets), and so does the same object sent on to
 * another path (an app that re-dispatches a request with a changed URL: found by a review, such a
 * request was passed as allowed under the first path's decision).
 */
const decisions = new WeakMap<object, { readonly policy: Policy; readonly method: string; readonly path: string; readonly decision: Decision }[]>();

/** The decision this policy already made for this request object at this method and path, if any. */
export function earlierDecision(req: object, policy: Policy, method: string, path: string): Decision | undefined {
  return decisions.get(req)?.find((d) => d.policy === policy && d.method === method && d.path === path)?.decision;
}

/**
 * Holds `req.method` to the method the policy judged, for the handler that runs after the adapter
 * (Express, node:http). Middleware mounted after the adapter that changes it (the `method-override`
 * package, reading `X-HTTP-Method-Override`) would have the framework route the request to a
 * handler of another operation than the one judged: found by an adapter review, a `POST` judged as
 * a tagging write reached a `GET` handler that reads addresses, past a spent `audience` budget. Such
 * a change now throws (a host mistake: the framework answers 500); mounted before the adapter, the
 * changed method is the one judged. Setting the same method again is allowed.
 */
export function holdMethod(req: { method?: string | undefined }, judged: string): void {
  Object.defineProperty(req, "method", {
    configurable: true,
    enumerable: true,
    get: () => judged,
    set: (value: unknown) => {
      if (value === judged) return;
      throw new PolicyConfigError("req.method", `was changed from ${judged} to ${String(value).slice(0, 32)} after newsletter-policy judged the request: mount method-override (and any middleware that changes the method or the URL) before the adapter, so that the request the handler runs is the one judged`);
    },
  });
}

/**
 * Decides one request: authenticates through `who`, resolves `newsletter`, checks, and tells
 * `onDecision`. Rejects only with the host's own errors (from `who`, `newsletter`).
 */
export async function decide<Req>(options: AdapterOptions<Req, unknown>, req: Req, incoming: Incoming): Promise<Outcome> {
  const who = await options.who(req);
  let newsletter: string | undefined;
  if (options.newsletter !== undefined) {
    // not asked for a path the policy cannot read: it refuses that one 400 whoever owns it
    const segments = judgedSegments(incoming.path);
    if (segments !== undefined) newsletter = await options.newsletter(req, { segments });
  }
  const body = incoming.readBody === undefined ? incoming.body : await incoming.readBody();
  const request: PolicyRequest & { [BOTH_QUERIES]?: true } = {
    method: incoming.method,
    path: incoming.path,
    // the parsed query and the raw query string in the path are both judged: a handler may read either
    [BOTH_QUERIES]: true,
    // untrusted: the policy reads it defensively and refuses what is not strings (400). A query that
    // does not hold its parameters as properties (a custom parser's URLSearchParams or Map) is left to
    // the raw query string in `path`, which holds the same parameters and is judged as every common
    // parser reads it
    ...(incoming.query !== undefined && holdsOwnParameters(incoming.query) && { query: incoming.query as PolicyRequest["query"] }),
    ...(body !== undefined && { body }),
  };
  const idempotencyKey = single(incoming.header("idempotency-key"));
  if (idempotencyKey !== undefined) request.idempotencyKey = idempotencyKey;
  const requestId = single(incoming.header("x-request-id"));
  if (requestId !== undefined) request.requestId = requestId;
  if (newsletter !== undefined) request.newsletter = newsletter;
  const decision = await options.policy.check(request, who);
  if (typeof req === "object" && req !== null) {
    const made = decisions.get(req) ?? [];
    made.push({ policy: options.policy, method: incoming.method, path: incoming.path, decision });
    decisions.set(req, made);
  }
  tell(options, decision, req);
  if (!decision.allowed) return { kind: "refuse", decision, who };
  if (decision.operation === "rateLimit.get") return { kind: "status", decision, who };
  if (isReplay(decision)) return { kind: "replay", decision, who };
  return { kind: "next", decision, who };
}

/** The JSON body of `GET /rate-limit` (spec §4): the same numbers as the headers. */
export function rateLimitStatus(policy: Policy, who: Who): Promise<RateLimitStatus> {
  // the plan's limits (who.limits), so the body carries the same numbers as the headers
  return policy.status(who.credential, who.limits === undefined ? undefined : { limits: who.limits });
}

/** The answer to `GET /rate-limit`: the budgets, or a 503 when the store cannot be read. */
export type RateLimitAnswer = { readonly status: 200; readonly body: RateLimitStatus } | { readonly status: 503; readonly body: { error: ErrorObject } };

/**
 * Answers `GET /rate-limit` (spec §4): the budgets from `policy.status`, or, when the store cannot
 * be read (the check failed open, or the store failed between the two calls), 503
 * `service_unavailable` in the spec's error shape (DESIGN §12), never the framework's error page.
 * A host mistake (`PolicyConfigError`) still throws.
 */
export async function rateLimitAnswer(policy: Policy, who: Who, decision: Decision): Promise<RateLimitAnswer> {
  try {
    return { status: 200, body: await rateLimitStatus(policy, who) };
  } catch (error) {
    if (error instanceof PolicyConfigError) throw error;
    return { status: 503, body: errorBody(decision.requestId, policy.config.docsUrl, "service_unavailable", say.STATUS_UNAVAILABLE) };
  }
}

/**
 * An allowed replay, as {@link isReplay} narrows a decision to. Narrowed to `AllowedDecision` alone,
 * a decision that was not a replay read as `never` after the test (an allowed one is not a refused
 * one): `if (isReplay(d)) return; d.view` did not compile (found by a new-user review).
 */
export type ReplayDecision = AllowedDecision & { reason: { rule: "allowed"; replay: true } };

/**
 * True for an allowed replay: a write whose `Idempotency-Key` already counted. Answer it from the
 * stored result of the first request; do not run the send again.
 *
 * @param decision - a decision from the policy or an adapter.
 * @returns whether the decision is an allowed replay.
 * @example
 * if (isReplay(res.locals.decision)) return res.json(await storedResult(req));
 */
export function isReplay(decision: Decision): decision is ReplayDecision {
  return decision.reason.rule === "allowed" && decision.reason.replay === true;
}

/**
 * Whether an allowed send, schedule or test send was answered without being sent: a status of 500
 * or more (the handler failed), or 404, which the framework answers when no route runs (the policy
 * read `POST /articles/a_1/sen%64` or `/send/` as a send, and Express or Fastify route neither) and a
 * handler when there is no such article. Either way nothing went out, so the cap charge is released
 * (found by a security review: such 404s spent a newsletter's daily cap without a send).
 */
export function sendFailed(status: number): boolean {
  return status >= 500 || status === 404;
}

/** What {@link releaseWhenFailed} needs of a node:http `ServerResponse` (Express's `res` is one). */
export interface NodeResponse {
  readonly statusCode: number;
  readonly writableFinished: boolean;
  once(event: "finish" | "close", listener: () => void): unknown;
  end: (...args: never[]) => unknown;
}

/**
 * Releases a send's cap charge when its response ends failed ({@link sendFailed}): on `finish`, or,
 * when the client went away first (`close` before `finish`: Node then never emits `finish`), when the
 * handler ends its response anyway, by the status it ends it with. A handler that never answers
 * keeps the charge (the send may still be under way). Found by an adapter review: a send that
 * failed after the client timed out stayed counted, and the client's retry under its
 * Idempotency-Key was answered as a replay of a send that never went out.
 */
export function releaseWhenFailed(res: NodeResponse, release: () => Promise<void>): void {
  const settle = (): void => {
    if (sendFailed(res.statusCode)) void release();
  };
  res.once("finish", settle);
  res.once("close", () => {
    if (res.writableFinished) return; // finished: settled above
    const end = res.end;
    res.end = function (this: unknown, ...args: never[]): unknown {
      res.end = end;
      settle();
      return end.apply(this, args);
    };
  });
}

/**
 * Releases the daily-cap charge of a failed send, schedule or test send, at most once per request.
 * Store errors are swallowed: the charge then stays counted, which refuses later sends rather than
 * admitting more than the cap.
 */
export function releaser(policy: Policy, decision: AllowedDecision): () => Promise<void> {
  let done = decision.release === undefined;
  return async () => {
    if (done) return;
    done = true;
    await policy.release(decision).catch(() => false);
  };
}
