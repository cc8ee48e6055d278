/** The Fastify adapter on a real Fastify 5 server (see scenario.ts for the cases). */
import type { AddressInfo } from "node:net";
import Fastify from "fastify";
import { expect, it, vi } from "vitest";
import { newsletterPolicy } from "../../src/adapters/fastify.js";
import { describeAdapter, type Host, type Running } from "./scenario.js";

async function start(host: Host): Promise<Running> {
  const app = Fastify();
  await app.register(newsletterPolicy, {
    policy: host.policy,
    who: (request) => host.who(request.headers.authorization),
    newsletter: (_request, { segments }) => host.newsletter(segments),
    onDecision: (decision) => host.onDecision(decision),
    onHookError: (error) => host.onHookError(error),
    onReplay: (decision, request, reply) => {
      const stored = host.replay(decision, request.headers["idempotency-key"] as string | undefined);
      if (stored !== undefined) void reply.send({ replayed: stored });
    },
  });
  for (const path of ["/newsletters/:id/subscribers", "/newsletters/:id/articles", "/newsletters/:id/threads", "/newsletters/:id/insights"]) {
    app.get(path, async (request) => host.read(request.decision));
  }
  app.post<{ Params: { id: string } }>("/articles/:id/send", async (request, reply) => {
    const result = host.send(request.params.id, request.headers["x-fail"] as string | undefined, request.headers["idempotency-key"] as string | undefined, request.decision);
    return reply.code(result.status).send(result.body);
  });
  app.post("/articles/:id/test-send", async (request) => ({ to: (request.body as { to: string[] }).to }));
  // a handler that takes the response over and answers it failed itself
  app.post("/articles/:id/schedule", async (request, reply) => {
    reply.hijack();
    reply.raw.writeHead(500, { "content-type": "application/json" });
    reply.raw.end(JSON.stringify({ error: `scheduling ${(request.params as { id: string }).id} failed` }));
  });
  // a route whose schema refuses a body: the plugin decides before validation (preValidation)
  app.post("/newsletters/:id/articles", { schema: { body: { type: "object", required: ["title"] } } }, async () => ({ created: true }));
  // a child plugin's routes: guarded too, since the plugin applies to the instance that registered it
  await app.register(async (child) => {
    child.get("/newsletters/:id/events", async (request) => host.read(request.decision));
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  return { base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
}

describeAdapter("Fastify 5", start, ({ call, host }) => {
  it("DESIGN Adapters: a handler that takes the response over (reply.hijack()) and answers 500 is released, and its answer carries the RateLimit-* headers (neither happened; found by an adapter review)", async () => {
    const before = host.releases;
    // call() checks every RateLimit-* header is present
    const failed = await call("/articles/a_1/schedule", "owner-hijack", { method: "POST" });
    expect(failed.status).toBe(500);
    await vi.waitFor(() => expect(host.releases).toBe(before + 1));
    const decision = host.decisions.at(-1)!;
    expect(decision).toMatchObject({ operation: "articles.schedule", allowed: true });
    expect(await host.policy.release(decision)).toBe(false); // released already: counts nothing any more
  });

  it("spec §8, DESIGN Adapters: a request the route's schema refuses (400) is decided first: charged, with the RateLimit-* headers (spec §8: every response carries them; found by a black-box review)", async () => {
    const first = await call("/newsletters/nl_1/articles", "owner-schema", { method: "POST", body: {} });
    expect(first.status).toBe(400);
    expect(first.headers.get("ratelimit-policy")).toContain('"write"');
    const second = await call("/newsletters/nl_1/articles", "owner-schema", { method: "POST", body: {} });
    expect(Number(second.headers.get("ratelimit-remaining"))).toBe(Number(first.headers.get("ratelimit-remaining")) - 1);
    expect((await call("/newsletters/nl_1/articles", "owner-schema", { method: "POST", body: { title: "t" } })).json).toEqual({ created: true });
    // and a refusal of the policy's comes before the schema's: a reader may not create articles
    expect((await call("/newsletters/nl_1/articles", "reader", { method: "POST", body: {} })).status).toBe(403);
  });

  it("applies to the whole instance, child plugins' routes included (like fastify-plugin, not encapsulated)", async () => {
    const refused = await call("/newsletters/nl_1/events", "reader"); // events count against audience and need audience: read
    expect(refused.status).toBe(403);
    const allowed = await call("/newsletters/nl_1/events", "owner-events");
    expect(allowed.status).toBe(200);
    expect(allowed.json).toMatchObject({ operation: "events.list" });
  });
});
