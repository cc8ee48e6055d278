/**
 * newsletter-policy for Fastify 5: `await app.register(newsletterPolicy, options);` applies to the
 * whole instance (like fastify-plugin); handlers find the decision on `request.decision`.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { AllowedDecision } from "../types.js";
import { assertOptions, decide, isReplay, originForm, rateLimitAnswer, releaser, releaseWhenFailed, type AdapterOptions, type ResourceTarget } from "./core.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The allowed decision for this request, set by newsletter-policy's plugin. */
    decision: AllowedDecision;
  }
}

/** Answers an allowed replay from the stored result (`reply.code(201).send(stored)`); if it sends nothing, the request goes on. */
export type FastifyReplay = (decision: AllowedDecision, request: FastifyRequest, reply: FastifyReply) => void | Promise<void>;

/** Options of the Fastify {@link newsletterPolicy}. */
export type FastifyPolicyOptions = AdapterOptions<FastifyRequest, FastifyReplay>;

/**
 * The Fastify plugin (Fastify 5). In `preValidation` (after body parsing, before a route's schema
 * validation, so that a request the schema refuses is charged and carries the headers too) it
 * reads the method, the path of `request.url`, `request.query` as Fastify's query parser handed it, the
 * `Idempotency-Key` and `X-Request-Id` headers and `request.body`; answers refusals and
 * `GET /rate-limit`; decorates `request.decision`. The `RateLimit-*` headers go on every response,
 * error responses included. A send, schedule or test send whose handler throws or whose response
 * has a status of 500 or more, or 404, is released once. Errors from `who` and `newsletter` go
 * to Fastify's error handler; from `onDecision`, to `onHookError`.
 *
 * @param app - the Fastify instance (the plugin applies to it, not to a child context).
 * @param options - `{ policy, who, newsletter?, onDecision?, onReplay?, onHookError? }`.
 * @throws PolicyConfigError (registration rejects) when an option is missing or of the wrong kind, naming it.
 * @example
 * await app.register(newsletterPolicy, { policy, who: (request) => authenticate(request) });
 * app.get("/newsletters/:id/articles", async (request) => list(request.decision.view));
 */
const plugin: FastifyPluginAsync<FastifyPolicyOptions> = async (app, options) => {
  assertOptions(options);
  const headers = new WeakMap<FastifyRequest, Record<string, string>>();
  app.decorateRequest("decision", undefined as unknown as AllowedDecision);

  app.addHook("preValidation", async (request, reply) => {
    const outcome = await decide(options, request, {
      method: request.method,
      // with its raw query string: the policy judges it and request.query both (a custom
      // querystringParser's object, or a handler that reads the raw URL, gets nothing unjudged)
      path: originForm(request.url),
      query: request.query,
      header: (name) => request.headers[name],
      body: request.body,
    });
    headers.set(request, outcome.decision.headers);
    reply.headers(outcome.decision.headers);
    if (outcome.kind === "refuse") return reply.code(outcome.decision.status).send(outcome.decision.body);
    if (outcome.kind === "status") {
      const answer = await rateLimitAnswer(options.policy, outcome.who, outcome.decision);
      return reply.code(answer.status).send(answer.body);
    }
    if (outcome.kind === "replay" && options.onReplay !== undefined) {
      await options.onReplay(outcome.decision, request, reply);
      if (reply.sent) return reply;
    }
    request.decision = outcome.decision;
    // on the raw response too, and the release watched there as Express and node:http watch it: a
    // handler that takes the response over (`reply.hijack()`) skips onSend, and its answer went out
    // without them and, failed, without the release (two failed sends spent a cap of 2; found by an
    // adapter review). A thrown handler's answer (Fastify's 500) ends the raw response too.
    for (const [name, value] of Object.entries(outcome.decision.headers)) reply.raw.setHeader(name, value);
    if (outcome.decision.release !== undefined) releaseWhenFailed(reply.raw, releaser(options.policy, outcome.decision));
    return undefined;
  });

  app.addHook("onSend", async (request, reply, payload) => {
    // an error handler may answer after clearing headers: every response carries them (spec §8)
    const set = headers.get(request);
    if (set !== undefined) for (const [name, value] of Object.entries(set)) if (!reply.hasHeader(name)) reply.header(name, value);
    return payload;
  });
};

// Apply to the registering instance, not an encapsulated child (what fastify-plugin does), so one
// registration covers every route; the display name shows in Fastify's plugin tree.
Object.assign(plugin, { [Symbol.for("skip-override")]: true, [Symbol.for("fastify.display-name")]: "newsletter-policy" });

/** The Fastify plugin: `await app.register(newsletterPolicy, options)`. */
export const newsletterPolicy = plugin;

export { isReplay };
export type { ReplayDecision } from "./core.js";
export type { AdapterOptions, ResourceTarget };
