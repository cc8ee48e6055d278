/**
 * newsletter-policy for Express 4 and 5: `app.use(express.json()); app.use(newsletterPolicy(options));`
 * Handlers find the decision on `res.locals.decision`.
 */
import type { Request, RequestHandler, Response } from "express";
import type { AllowedDecision } from "../types.js";
import { assertOptions, decide, earlierDecision, holdMethod, isReplay, rateLimitAnswer, releaser, releaseWhenFailed, type AdapterOptions, type ResourceTarget } from "./core.js";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      /** The allowed decision for this request, set by newsletter-policy's middleware. */
      decision: AllowedDecision;
    }
  }
}

/** Answers an allowed replay from the stored result (e.g. `res.status(201).json(stored)`); if it sends nothing, the request goes on. */
export type ExpressReplay = (decision: AllowedDecision, req: Request, res: Response) => void | Promise<void>;

/** Options of the Express {@link newsletterPolicy}. */
export type ExpressPolicyOptions = AdapterOptions<Request, ExpressReplay>;

/**
 * Makes the Express middleware (Express 4 and 5). Reads `req.method`, `req.path` (relative to where
 * the middleware is mounted), `req.query` as Express's query parser handed it, the
 * `Idempotency-Key` and `X-Request-Id` headers and `req.body` (mount `express.json()` first).
 * Sets the `RateLimit-*` headers on every response; answers refusals and `GET /rate-limit`; puts the
 * allowed decision on `res.locals.decision`; releases a send, schedule or test send whose response
 * goes out with a status of 500 or more, or 404 (Express's error handler answers 500 for a thrown handler).
 * Errors from `who` and `newsletter` go to `next(error)`; from `onDecision`, to `onHookError`.
 *
 * @param options - `{ policy, who, newsletter?, onDecision?, onReplay?, onHookError? }`.
 * @returns an Express `RequestHandler`.
 * @throws PolicyConfigError when an option is missing or of the wrong kind, naming it.
 * @example
 * app.use(express.json());
 * app.use(newsletterPolicy({ policy, who: (req) => authenticate(req), newsletter: (_req, { segments }) => owner(segments) }));
 * app.get("/newsletters/:id/articles", (req, res) => res.json(list(req.params.id, res.locals.decision.view)));
 */
export function newsletterPolicy(options: ExpressPolicyOptions): RequestHandler {
  assertOptions(options);
  async function run(req: Request, res: Response): Promise<boolean> {
    // req.path as Express routes it (below the mount point; an absolute-form target's path too) with
    // req.url's raw query string: the policy judges that string and req.query both, so a handler
    // that reads either gets nothing unjudged
    const mark = req.url.indexOf("?");
    const path = mark < 0 ? req.path : req.path + req.url.slice(mark);
    // decided already by this adapter mounted higher up (the same policy, method and path): charged
    // once; passed on when it was allowed, and answered already when not
    const earlier = earlierDecision(req, options.policy, req.method, path);
    if (earlier !== undefined) return earlier.allowed;
    const outcome = await decide(options, req, { method: req.method, path, query: req.query, header: (name) => req.headers[name], body: req.body as unknown });
    res.set(outcome.decision.headers);
    if (outcome.kind === "refuse") {
      res.status(outcome.decision.status).json(outcome.decision.body);
      return false;
    }
    if (outcome.kind === "status") {
      const answer = await rateLimitAnswer(options.policy, outcome.who, outcome.decision);
      res.status(answer.status).json(answer.body);
      return false;
    }
    if (outcome.kind === "replay" && options.onReplay !== undefined) {
      await options.onReplay(outcome.decision, req, res);
      if (res.headersSent) return false;
    }
    res.locals.decision = outcome.decision;
    holdMethod(req, req.method);
    if (outcome.decision.release !== undefined) {
      releaseWhenFailed(res, releaser(options.policy, outcome.decision));
    }
    return true;
  }
  return (req, res, next) => {
    run(req, res).then((proceed) => proceed && next(), next);
  };
}

export { isReplay };
export type { ReplayDecision } from "./core.js";
export type { AdapterOptions, ResourceTarget };
