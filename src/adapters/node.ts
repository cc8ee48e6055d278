/**
 * newsletter-policy for a plain `node:http` server: a guard to await at the top of the handler.
 *
 * @example
 * const guard = newsletterPolicy({ policy, who: (req) => authenticate(req) });
 * createServer(async (req, res) => {
 *   const decision = await guard(req, res, await readJson(req));
 *   if (!decision) return; // already answered: a refusal, GET /rate-limit, or a replay onReplay answered
 *   res.end(JSON.stringify(await handle(req, decision.view)));
 * });
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AllowedDecision } from "../types.js";
import { assertOptions, decide, earlierDecision, holdMethod, isReplay, originForm, rateLimitAnswer, releaser, releaseWhenFailed, type AdapterOptions, type ResourceTarget } from "./core.js";

/** Answers an allowed replay from the stored result (write to `res`); if it leaves `res` unanswered, the guard returns the decision. */
export type NodeReplay = (decision: AllowedDecision, req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** Options of the node:http {@link newsletterPolicy}. */
export type NodePolicyOptions = AdapterOptions<IncomingMessage, NodeReplay>;

/**
 * The guard: decides `req`, sets the `RateLimit-*` headers on `res`, and answers refusals and
 * `GET /rate-limit` itself.
 *
 * @param req - the request; its `url` (path and query string) is read by the policy's own reader.
 * @param res - the response; the headers are set on it whatever the decision.
 * @param body - the parsed JSON body, if any (test-send `to`, tagging `subscribers`).
 * @returns the allowed decision to go on with, or `undefined` when `res` was already answered.
 */
export type NodeGuard = (req: IncomingMessage, res: ServerResponse, body?: unknown) => Promise<AllowedDecision | undefined>;

function answerJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
}

/**
 * Makes the node:http guard. A send, schedule or test send whose response then goes out with a
 * status of 500 or more, or 404, is released (uncounted from the daily cap) once; a handler that throws must
 * answer 500, as a server should, or call `policy.release(decision)` itself.
 *
 * @param options - `{ policy, who, newsletter?, onDecision?, onReplay?, onHookError? }`.
 * @returns the guard: `const decision = await guard(req, res, body); if (!decision) return;`
 * @throws PolicyConfigError when an option is missing or of the wrong kind, naming it.
 * @example
 * const guard = newsletterPolicy({ policy, who: async (req) => ({ credential: await keyOf(req), roles: rolesOf }) });
 * const decision = await guard(req, res, body);
 * if (!decision) return;
 */
export function newsletterPolicy(options: NodePolicyOptions): NodeGuard {
  assertOptions(options);
  return async (req, res, body) => {
    const method = req.method ?? "GET";
    const path = originForm(req.url ?? "/");
    // guarded already by this policy at this method and path: charged once; the same decision, or undefined when it was answered
    const earlier = earlierDecision(req, options.policy, method, path);
    if (earlier !== undefined) return earlier.allowed ? earlier : undefined;
    const outcome = await decide(options, req, { method, path, header: (name) => req.headers[name], body });
    const { decision } = outcome;
    for (const [name, value] of Object.entries(decision.headers)) res.setHeader(name, value);
    if (outcome.kind === "refuse") return void answerJson(res, outcome.decision.status, outcome.decision.body);
    if (outcome.kind === "status") {
      const answer = await rateLimitAnswer(options.policy, outcome.who, outcome.decision);
      return void answerJson(res, answer.status, answer.body);
    }
    if (outcome.kind === "replay" && options.onReplay !== undefined) {
      await options.onReplay(outcome.decision, req, res);
      if (res.headersSent) return undefined;
    }
    if (outcome.decision.release !== undefined) {
      releaseWhenFailed(res, releaser(options.policy, outcome.decision));
    }
    holdMethod(req, method);
    return outcome.decision;
  };
}

export { isReplay };
export type { ReplayDecision } from "./core.js";
export type { AdapterOptions, ResourceTarget };
