/** The Fastify adapter on a real Fastify 5 server (see scenario.ts for the cases). */
import type { AddressInfo } from "node:net";
import Fastify from "fastify";
import { expect, it } from "vitest";
import { newsletterPolicy } from "../../src/adapters/fastify.js";
import { describeAdapter, type Host, type Running } from "./scenario.js";

async function start(host: Host): Promise<Running> {
  const app = Fastify();
  await app.register(newsletterPolicy, {
    policy: host.policy,
    who: (request) => host.who(request.headers.authorization),
    newsletter: (request) => host.newsletter(request.url),
    onDecision: (decision) => void host.decisions.push(decision),
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
  // a child plugin's routes: guarded too, since the plugin applies to the instance that registered it
  await app.register(async (child) => {
    child.get("/newsletters/:id/events", async (request) => host.read(request.decision));
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  return { base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
}

describeAdapter("Fastify 5", start, ({ call }) => {
  it("applies to the whole instance, child plugins' routes included (like fastify-plugin, not encapsulated)", async () => {
    const refused = await call("/newsletters/nl_1/events", "reader"); // events count against audience and need audience: read
    expect(refused.status).toBe(403);
    const allowed = await call("/newsletters/nl_1/events", "owner-events");
    expect(allowed.status).toBe(200);
    expect(allowed.json).toMatchObject({ operation: "events.list" });
  });
});
