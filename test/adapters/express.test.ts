/** The Express adapter on real Express 4 and Express 5 servers (see scenario.ts for the cases). */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express5 from "express";
import express4 from "express4";
import type { ErrorRequestHandler, Express } from "express";
import { expect, it } from "vitest";
import { newsletterPolicy } from "../../src/adapters/express.js";
import { describeAdapter, Unauthenticated, type Host, type Running } from "./scenario.js";

async function start(make: () => Express, host: Host): Promise<Running> {
  const app = make();
  app.use(express5.json());
  app.use(
    newsletterPolicy({
      policy: host.policy,
      who: (req) => host.who(req.get("authorization")),
      newsletter: (_req, { segments }) => host.newsletter(segments),
      onDecision: (decision) => host.onDecision(decision),
      onHookError: (error) => host.onHookError(error),
      onReplay: (decision, req, res) => {
        const stored = host.replay(decision, req.get("idempotency-key"));
        if (stored !== undefined) res.json({ replayed: stored });
      },
    }),
  );
  for (const path of ["/newsletters/:id/subscribers", "/newsletters/:id/articles", "/newsletters/:id/threads", "/newsletters/:id/insights"]) {
    app.get(path, (_req, res) => void res.json(host.read(res.locals.decision)));
  }
  app.post("/articles/:id/send", (req, res) => {
    const result = host.send(req.params.id!, req.get("x-fail"), req.get("idempotency-key"), res.locals.decision);
    res.status(result.status).json(result.body);
  });
  app.post("/articles/:id/test-send", (req, res) => void res.json({ to: (req.body as { to: string[] }).to }));
  const unauthenticated: ErrorRequestHandler = (error, _req, res, next) => {
    if (error instanceof Unauthenticated) return void res.status(401).json({ error: "unauthenticated" });
    next(error); // Express's own error handler answers 500
  };
  app.use(unauthenticated);
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describeAdapter("Express 4", (host) => start(() => express4(), host), ({ call }) => {
  it("Express 4's qs hands nested objects (?status[x]=sent) that are not strings: refused 400 naming the parameter", async () => {
    const nested = await call("/newsletters/nl_1/articles?status[x]=sent", "reader");
    expect(nested.status).toBe(400);
    expect(nested.json.error).toMatchObject({ code: "invalid_request", param: "status" });
  });
});

describeAdapter("Express 5", (host) => start(() => express5(), host));

describeAdapter("Express 5 (query parser: extended)", (host) => start(() => express5().set("query parser", "extended"), host), ({ call }) => {
  it("qs's nested objects are refused 400 naming the parameter", async () => {
    const nested = await call("/newsletters/nl_1/insights?expand[a]=subscriber", "insightsOnly");
    expect(nested.status).toBe(400);
    expect(nested.json.error).toMatchObject({ code: "invalid_request", param: "expand" });
  });
});
