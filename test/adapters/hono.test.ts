/** The Hono adapter on a real Hono 4 server through @hono/node-server (see scenario.ts for the cases). */
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { expect, it } from "vitest";
import { newsletterPolicy, type PolicyEnv } from "../../src/adapters/hono.js";
import { describeAdapter, Unauthenticated, type Host, type Running } from "./scenario.js";

async function start(host: Host): Promise<Running> {
  const app = new Hono<PolicyEnv>();
  app.use(
    newsletterPolicy({
      policy: host.policy,
      who: (c) => host.who(c.req.header("authorization")),
      newsletter: (c) => host.newsletter(c.req.path),
      onDecision: (decision) => host.onDecision(decision),
      onHookError: (error) => host.onHookError(error),
      onReplay: (decision, c) => {
        const stored = host.replay(decision, c.req.header("idempotency-key"));
        return stored === undefined ? undefined : c.json({ replayed: stored });
      },
    }),
  );
  for (const path of ["/newsletters/:id/subscribers", "/newsletters/:id/articles", "/newsletters/:id/threads", "/newsletters/:id/insights"]) {
    app.get(path, (c) => c.json(host.read(c.get("decision"))));
  }
  app.post("/articles/:id/send", (c) => {
    const result = host.send(c.req.param("id"), c.req.header("x-fail"), c.req.header("idempotency-key"), c.get("decision"));
    return c.json(result.body, result.status as 200);
  });
  app.post("/articles/:id/test-send", async (c) => {
    const body = (await c.req.json()) as { to: string[] }; // Hono caches the body the adapter read: still readable here
    return c.json({ to: body.to });
  });
  app.onError((error, c) => (error instanceof Unauthenticated ? c.json({ error: "unauthenticated" }, 401) : c.json({ error: "internal" }, 500)));
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
  });
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describeAdapter("Hono 4", start, ({ call }) => {
  it("malformed JSON reads as no body: a test send is then 400 naming `to`, with the rate-limit headers", async () => {
    const malformed = await call("/articles/a_1/test-send", "owner-malformed", { method: "POST", raw: '{"to": ["a@x.io"' });
    expect(malformed.status).toBe(400);
    expect(malformed.json.error).toMatchObject({ code: "invalid_request", param: "to" });
  });
});
