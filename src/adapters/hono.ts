/**
 * newsletter-policy for Hono 4, on any runtime with the Fetch API (no `node:` imports):
 * `app.use(newsletterPolicy(options));` handlers read `c.get("decision")`.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AllowedDecision } from "../types.js";
import { assertOptions, decide, earlierDecision, isReplay, rateLimitAnswer, releaser, sendFailed, type AdapterOptions, type ResourceTarget } from "./core.js";

declare module "hono" {
  interface ContextVariableMap {
    /** The allowed decision for this request, set by newsletter-policy's middleware. */
    decision: AllowedDecision;
  }
}

/** The Hono environment the middleware sets: `new Hono<PolicyEnv>()` types `c.get("decision")`. */
export type PolicyEnv = { Variables: { decision: AllowedDecision } };

/**
 * Answers an allowed replay: return the stored result as a Response; return nothing to let the
 * request go on. Called with the Context twice, as `req` and as `res`, so that DESIGN's
 * `(decision, req, res)` shape fits; `(decision, c)` fits too.
 */
export type HonoReplay = (decision: AllowedDecision, c: Context, res: Context) => Response | void | Promise<Response | void>;

/** Options of the Hono {@link newsletterPolicy}. */
export type HonoPolicyOptions = AdapterOptions<Context, HonoReplay>;

/**
 * The raw path of the request URL with its query string (as sent, percent-encoded; a URL holds no
 * fragment): the policy decodes it once, and judges the query string and `c.req.queries()` both.
 */
function rawPath(url: string): string {
  const start = url.indexOf("/", url.indexOf("://") + 3);
  if (start < 0) return "/";
  const end = url.indexOf("#", start);
  return end < 0 ? url.slice(start) : url.slice(start, end);
}

/**
 * The body as the handler's `c.req.json()` reads it, of a request whose media type is JSON
 * (`application/json`, `text/json`, `…+json`) or plain text, or its bytes when it is not JSON; Hono
 * keeps the text, so the handler can still call `c.req.json()` or `c.req.text()`. A body of another type is not read: a handler may
 * read it raw (`c.req.raw`, a stream, a multipart upload whose boundary changes on every retry),
 * which a read here would spend or bind to an Idempotency-Key byte for byte (both were tried and
 * broke handlers and retries; found by a diff review).
 */
async function jsonBody(c: Context): Promise<unknown> {
  if (c.req.method === "GET" || c.req.method === "HEAD") return undefined;
  // the media type alone: "json" in a parameter (`multipart/form-data; boundary=--json--`) made a
  // binary upload read as text, and the handler got other bytes (found by a review)
  const type = (c.req.header("content-type") ?? "").split(";", 1)[0]!.trim().toLowerCase();
  // fetch's default for a string body is text/plain: JSON sent so is what c.req.json() reads all the
  // same, so it is judged (a second body under one Idempotency-Key was a replay, not a 409: DESIGN §7)
  if (!(type === "application/json" || type === "text/json" || type.endsWith("+json") || type === "text/plain")) return undefined;
  // read as text once (Hono keeps it: the handler's c.req.json() and c.req.text() read it again)
  const text = await c.req.text().catch(() => "");
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // a text that is not JSON is judged as its bytes: as the string it was one body with the JSON
    // string that spells it (`x` and `"x"`), and two bodies that are not JSON were both nothing
    // (`{bad1`, `{bad2`), so under one Idempotency-Key the second was a replay where the handler
    // reading c.req.text() saw another body (found by a diff review)
    return new TextEncoder().encode(text);
  }
}

/** `response` with the headers it lacks; a copy when its headers are immutable (a Response from fetch). */
function withHeaders(response: Response, headers: Record<string, string>): Response {
  let target = response;
  for (const [name, value] of Object.entries(headers)) {
    if (target.headers.has(name)) continue;
    try {
      target.headers.set(name, value);
    } catch {
      target = new Response(target.body, target);
      target.headers.set(name, value);
    }
  }
  return target;
}

/**
 * Makes the Hono middleware (Hono 4). Reads the method, the raw path of `c.req.url`,
 * `c.req.queries()` as Hono parses them, the `Idempotency-Key` and `X-Request-Id` headers and a
 * JSON body; answers refusals and `GET /rate-limit`; sets `c.get("decision")`. The `RateLimit-*`
 * headers go on every response, `onError` and not-found answers included. A send, schedule or test
 * send whose handler throws or answers 500 or more, or 404, is released once. Errors from `who` and
 * `newsletter` go to `app.onError`; from `onDecision`, to `onHookError`.
 *
 * @param options - `{ policy, who, newsletter?, onDecision?, onReplay?, onHookError? }`; `who` and the others get the Context `c`.
 * @returns a Hono `MiddlewareHandler`.
 * @throws PolicyConfigError when an option is missing or of the wrong kind, naming it.
 * @example
 * const app = new Hono<PolicyEnv>();
 * app.use(newsletterPolicy({ policy, who: (c) => authenticate(c) }));
 * app.get("/newsletters/:id/articles", (c) => c.json(list(c.req.param("id"), c.get("decision").view)));
 */
export function newsletterPolicy(options: HonoPolicyOptions): MiddlewareHandler<PolicyEnv> {
  assertOptions(options);
  return async (c, next) => {
    const path = rawPath(c.req.url);
    // decided already by this middleware on a parent app (the same policy, method and path): charged once, passed on as allowed
    const earlier = earlierDecision(c, options.policy, c.req.method, path);
    if (earlier !== undefined) {
      if (earlier.allowed) await next();
      return undefined;
    }
    const outcome = await decide(options, c, {
      method: c.req.method,
      path,
      query: c.req.queries(),
      header: (name) => c.req.header(name),
      // read once `who` has answered: a request without a credential makes the server read no body
      // (it read and parsed one of 150 MB before `who` could refuse it; found by an adapter review)
      readBody: () => jsonBody(c),
    });
    const { headers } = outcome.decision;
    if (outcome.kind === "refuse") return c.json(outcome.decision.body, outcome.decision.status as 400, headers);
    if (outcome.kind === "status") {
      const answer = await rateLimitAnswer(options.policy, outcome.who, outcome.decision);
      return c.json(answer.body, answer.status, headers);
    }
    // set before onReplay runs: when it throws, onError's answer carries them too (spec §8)
    for (const [name, value] of Object.entries(headers)) c.header(name, value);
    if (outcome.kind === "replay" && options.onReplay !== undefined) {
      // DESIGN's (decision, req, res): Hono has one Context for both, so it is passed as both
      const answer = await options.onReplay(outcome.decision, c, c);
      if (answer instanceof Response) return withHeaders(answer, headers);
    }
    c.set("decision", outcome.decision);
    await next();
    if (c.error !== undefined || sendFailed(c.res.status)) await releaser(options.policy, outcome.decision)();
    // a handler's own Response, onError's or notFound's answer: every response carries them (spec §8)
    const answered = withHeaders(c.res, headers);
    if (answered !== c.res) c.res = answered;
    return undefined;
  };
}

export { isReplay };
export type { ReplayDecision } from "./core.js";
export type { AdapterOptions, ResourceTarget };
