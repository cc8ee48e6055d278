/**
 * Middleware that changes the method after the adapter judged the request (the `method-override`
 * package, `X-HTTP-Method-Override`), on real Express 4 and 5 servers and a node:http server. Found
 * by an adapter review: mounted after the adapter, a `POST /tags/t_1/subscribers` judged as a tagging
 * write (general + write) reached the `GET` handler of a host operation reading addresses, past a
 * spent `audience` budget (spec §8 Rate-limit budgets, 2: reads returning addresses count against
 * `audience`). The handler must run only what was judged: such a change throws (500), and mounted
 * before the adapter the overriding method is the one judged.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import express5 from "express";
import express4 from "express4";
import type { Express, RequestHandler } from "express";
import methodOverride from "method-override";
import { afterEach, describe, expect, it } from "vitest";
import { newsletterPolicy } from "../../src/adapters/express.js";
import { newsletterPolicy as nodePolicy } from "../../src/adapters/node.js";
import { createPolicy, defineConfig, MemoryStore, type Credential } from "../../src/index.js";

const config = defineConfig({
  budgets: { audience: { limit: 2, window: 60 } },
  operations: [{ id: "tags.subscribers.list", method: "GET", path: "/tags/{tag}/subscribers", needs: "audience: read", budgets: ["audience"] }],
});
const credential: Credential = { id: "key_mo", kind: "api_key", newsletters: { nl_1: { audience: "write" } } };
const who = () => ({ credential, roles: { nl_1: "owner" } });
const override = { "x-http-method-override": "GET", "content-type": "application/json" };
const tagging = JSON.stringify({ subscribers: ["s_1"] });

let servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  servers = [];
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** What reached the handlers: "GET" for the address read, "POST" for the tagging write. */
let ran: string[] = [];

async function expressApp(make: () => Express, overrideFirst: boolean): Promise<string> {
  const app = make();
  const guard = newsletterPolicy({ policy: createPolicy({ store: new MemoryStore(), config }), who, newsletter: () => "nl_1" });
  const mo = methodOverride("X-HTTP-Method-Override") as unknown as RequestHandler;
  app.use(express5.json());
  if (overrideFirst) app.use(mo, guard);
  else app.use(guard, mo);
  app.get("/tags/:tag/subscribers", (_req, res) => void (ran.push("GET"), res.json({ addresses: ["a@example.com"] })));
  app.post("/tags/:tag/subscribers", (_req, res) => void (ran.push("POST"), res.json({ tagged: 1 })));
  return listen(createServer(app));
}

async function reads(base: string, n: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) statuses.push((await fetch(`${base}/tags/t_1/subscribers`)).status);
  return statuses;
}

for (const [name, make] of [["Express 4", () => express4()], ["Express 5", () => express5()]] as const) {
  describe(`${name}: method-override`, () => {
    it("mounted after the adapter: an overridden method throws (500), and the GET handler never runs on a judged POST", async () => {
      ran = [];
      const base = await expressApp(make, false);
      expect(await reads(base, 3)).toEqual([200, 200, 429]); // audience spent
      for (let i = 0; i < 3; i++) {
        const r = await fetch(`${base}/tags/t_1/subscribers`, { method: "POST", headers: override, body: tagging });
        expect(r.status).toBe(500);
        expect(r.headers.get("ratelimit-policy")).toContain('"write"');
      }
      expect(ran).toEqual(["GET", "GET"]);
      // a plain POST (no override) is the tagging write, as judged
      const plain = await fetch(`${base}/tags/t_1/subscribers`, { method: "POST", headers: { "content-type": "application/json" }, body: tagging });
      expect(plain.status).toBe(200);
      expect(ran).toEqual(["GET", "GET", "POST"]);
    });

    it("mounted before the adapter: the overriding method is judged (the spent audience budget refuses it)", async () => {
      ran = [];
      const base = await expressApp(make, true);
      expect(await reads(base, 2)).toEqual([200, 200]);
      const r = await fetch(`${base}/tags/t_1/subscribers`, { method: "POST", headers: override, body: tagging });
      expect(r.status).toBe(429);
      expect(((await r.json()) as { error: { message: string } }).error.message).toContain("audience");
      expect(ran).toEqual(["GET", "GET"]);
    });
  });
}

describe("node:http: a guard, then method-override (connect style)", () => {
  it("the overridden method throws where the override sets it, and the host's handler never sees it", async () => {
    ran = [];
    const guard = nodePolicy({ policy: createPolicy({ store: new MemoryStore(), config }), who, newsletter: () => "nl_1" });
    const mo = methodOverride("X-HTTP-Method-Override") as unknown as (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;
    const base = await listen(
      createServer(async (req, res) => {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        const body = chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown);
        const decision = await guard(req, res, body);
        if (!decision) return;
        try {
          mo(req, res, () => {
            ran.push(req.method ?? "?");
            res.writeHead(200).end("{}");
          });
        } catch (error) {
          res.writeHead(500).end(String(error));
        }
      }),
    );
    expect(await reads(base, 3)).toEqual([200, 200, 429]);
    const r = await fetch(`${base}/tags/t_1/subscribers`, { method: "POST", headers: override, body: tagging });
    expect(r.status).toBe(500);
    expect(await r.text()).toContain("req.method was changed from POST to GET");
    expect(ran).toEqual(["GET", "GET"]);
  });
});
