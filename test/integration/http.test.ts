import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPolicy, MemoryStore, type Credential } from "../../src/index.js";

// The node:http integration of docs/integration.md, over a real socket on loopback.
const credential: Credential = { id: "key_http", kind: "api_key", account: true, newsletters: { nl_1: { audience: "read", sending: "write" } } };
const policy = createPolicy({ store: new MemoryStore(), config: { caps: { dispatch: { limit: 1 } } } });
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer(async (req, res) => {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const decision = await policy.check(
      {
        method: req.method ?? "GET",
        path: req.url ?? "/",
        idempotencyKey: req.headers["idempotency-key"] as string | undefined,
        body: raw ? JSON.parse(raw) : undefined,
        newsletter: req.headers["x-newsletter"] as string | undefined,
      },
      { credential, roles: { nl_1: "owner" } },
    );
    for (const [name, value] of Object.entries(decision.headers)) res.setHeader(name, value);
    if (!decision.allowed) return void res.writeHead(decision.status, { "content-type": "application/json" }).end(JSON.stringify(decision.body));
    if (decision.operation === "rateLimit.get") return void res.writeHead(200).end(JSON.stringify(await policy.status(credential)));
    res.writeHead(200).end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("node:http integration", () => {
  it("answers allowed and refused requests with the spec's status, body and headers", async () => {
    const ok = await fetch(`${base}/newsletters/nl_1/subscribers?limit=100`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("ratelimit-policy")).toBe('"general";q=600;w=60, "audience";q=60;w=60');
    expect(ok.headers.get("ratelimit-remaining")).toBe("59");

    const denied = await fetch(`${base}/newsletters/nl_1/insights`);
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { error: object }).error).toMatchObject({ code: "insufficient_scope", allowed_values: ["insights: read"] });

    const send = () => fetch(`${base}/articles/a_1/send`, { method: "POST", headers: { "x-newsletter": "nl_1" } });
    expect((await send()).status).toBe(200);
    const capped = await send();
    expect(capped.status).toBe(429);
    expect(capped.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);

    const status = (await (await fetch(`${base}/rate-limit`)).json()) as { budgets: Record<string, object> };
    expect(status.budgets.audience).toMatchObject({ limit: 60, remaining: 58 }); // the 403 above was charged too (DESIGN §2)
  });
});
