/** The framework typing of the decision: Express `res.locals`, Fastify request decoration, Hono `Variables`. */
import type { Request, Response } from "express";
import type { FastifyRequest } from "fastify";
import { Hono } from "hono";
import { expectTypeOf, test } from "vitest";
import { newsletterPolicy as honoPolicy, type PolicyEnv } from "../../src/adapters/hono.js";
import type { ExpressPolicyOptions, ResourceTarget } from "../../src/adapters/express.js";
import type { NodeGuard } from "../../src/adapters/node.js";
import type { AllowedDecision, Decision, Who } from "../../src/index.js";
import "../../src/adapters/fastify.js";

test("Express: res.locals.decision is the allowed decision; who gets the Express request", () => {
  expectTypeOf<Response["locals"]["decision"]>().toEqualTypeOf<AllowedDecision>();
  expectTypeOf<Parameters<ExpressPolicyOptions["who"]>[0]>().toEqualTypeOf<Request>();
  expectTypeOf<ReturnType<ExpressPolicyOptions["who"]>>().toEqualTypeOf<Who | Promise<Who>>();
});

test("Fastify: request.decision is declared on FastifyRequest", () => {
  expectTypeOf<FastifyRequest["decision"]>().toEqualTypeOf<AllowedDecision>();
});

test("Hono: c.get('decision') is typed through Variables", () => {
  const app = new Hono<PolicyEnv>();
  app.use(honoPolicy({ policy: null as never, who: null as never }));
  app.get("/", (c) => {
    expectTypeOf(c.get("decision")).toEqualTypeOf<AllowedDecision>();
    return c.text("");
  });
});

test("node: the guard resolves to the allowed decision or undefined", () => {
  expectTypeOf<ReturnType<NodeGuard>>().toEqualTypeOf<Promise<AllowedDecision | undefined>>();
});

test("DESIGN Adapters: onReplay's (decision, req, res) shape is accepted by every adapter, Hono too (the Context is both; found by a black-box review)", () => {
  honoPolicy({ policy: null as never, who: null as never, onReplay: (_decision, _req, res) => res.json({ replayed: true }) });
  honoPolicy({ policy: null as never, who: null as never, onReplay: (_decision, c) => c.json({ replayed: true }) });
});

test("DESIGN Adapters (newsletter resolver): (req) => … still fits; the second argument gives the judged segments as a read-only list", () => {
  expectTypeOf<Parameters<NonNullable<ExpressPolicyOptions["newsletter"]>>[1]>().toEqualTypeOf<ResourceTarget>();
  expectTypeOf<ResourceTarget["segments"]>().toEqualTypeOf<readonly string[]>();
  const oneArgument: ExpressPolicyOptions["newsletter"] = (req) => req.path;
  const twoArguments: ExpressPolicyOptions["newsletter"] = (_req, { segments }) => segments[1];
  honoPolicy({ policy: null as never, who: null as never, newsletter: (_c, { segments }) => (segments[0] === "articles" ? "nl_1" : undefined) });
  void [oneArgument, twoArguments];
});

test("isReplay narrows to a replay, and leaves a decision that is not one as it was (it read as never: `if (isReplay(d)) return; d.view` did not compile; found by a new-user review)", async () => {
  const { isReplay } = await import("../../src/adapters/node.js");
  const decision = {} as AllowedDecision;
  if (isReplay(decision)) {
    expectTypeOf(decision.reason.replay).toEqualTypeOf<true>();
    expectTypeOf(decision.status).toEqualTypeOf<200>();
  } else {
    expectTypeOf(decision).toEqualTypeOf<AllowedDecision>();
    expectTypeOf(decision.view).toEqualTypeOf<"reader" | "full" | undefined>();
  }
  const any = {} as Decision;
  if (!isReplay(any)) expectTypeOf(any).toEqualTypeOf<Decision>();
});
