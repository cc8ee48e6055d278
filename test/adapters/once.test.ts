/**
 * Found by an adapter review, on real servers:
 * - a send that failed after its client had gone (a timeout) stayed counted toward the daily cap
 *   with the Express and node:http adapters (they released on `finish`, which Node never emits once
 *   the socket is gone), and the client's retry under its Idempotency-Key was answered as a replay
 *   of a send that never went out (DESIGN Adapters: "releases a send … whose handler fails";
 *   DESIGN §7: "once that charge is released, the key counts again"; spec §8);
 * - an adapter mounted twice on one request (on the app and on a router or sub-app) charged every
 *   budget and the cap twice, and read a first send with a key as a replay of itself (spec §1.2, §8.1:
 *   a request is charged to each budget it belongs to, once).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import express5 from "express";
import express4 from "express4";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { afterAll, describe, expect, it } from "vitest";
import { createPolicy, MemoryStore, type Credential, type Decision } from "../../src/index.js";
import { key } from "../fixtures.js";
import { newsletterPolicy as expressPolicy } from "../../src/adapters/express.js";
import { newsletterPolicy as honoPolicy, type PolicyEnv } from "../../src/adapters/hono.js";
import { newsletterPolicy as nodePolicy } from "../../src/adapters/node.js";

const sender: Credential = { id: "key_sender", kind: "api_key", newsletters: { nl_1: { sending: "write", audience: "read" } } };
const who = () => ({ credential: sender, roles: { nl_1: "owner" } });
const newsletter = () => "nl_1";
const policyOf = () => createPolicy({ store: new MemoryStore(), config: { docsUrl: "https://docs.example/errors", caps: { dispatch: { limit: 1 } } } });

const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
});

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A send whose client gives up after 60 ms (the socket destroyed), with an Idempotency-Key. */
async function sendAndLeave(base: string, key: string): Promise<void> {
  const { port } = new URL(base);
  const socket = connect(Number(port), "127.0.0.1");
  await new Promise((resolve) => socket.once("connect", resolve));
  socket.write(`POST /articles/a_1/send HTTP/1.1\r\nHost: x\r\nIdempotency-Key: ${key}\r\nContent-Length: 0\r\n\r\n`);
  await sleep(60);
  socket.destroy();
}

/** A server whose first send fails (500) 200 ms after it starts, once its client has gone; every later send succeeds. */
function failingFirst(firstStatus = 500): { failed: Promise<void>; attempt: () => Promise<{ status: number }> } {
  let calls = 0;
  let done!: () => void;
  const failed = new Promise<void>((resolve) => (done = resolve));
  return {
    failed,
    attempt: async () => {
      if (++calls > 1) return { status: 200 };
      await sleep(200);
      setTimeout(done, 50);
      return { status: firstStatus };
    },
  };
}

const servers: Record<string, (attempt: () => Promise<{ status: number }>) => Server> = {
  "node:http": (attempt) => {
    const guard = nodePolicy({ policy: policyOf(), who, newsletter });
    return createServer(async (req, res) => {
      if (!(await guard(req, res, undefined))) return;
      const { status } = await attempt();
      res.writeHead(status).end();
    });
  },
  "Express 5": (attempt) => {
    const app = express5();
    app.use(expressPolicy({ policy: policyOf(), who, newsletter }));
    app.post("/articles/:article/send", async (_req, res) => void res.status((await attempt()).status).end());
    return createServer(app);
  },
  "Express 4": (attempt) => {
    const app = express4();
    app.use(expressPolicy({ policy: policyOf(), who, newsletter }) as never);
    app.post("/articles/:article/send", (_req, res) => void attempt().then(({ status }) => res.status(status).end()));
    return createServer(app as never);
  },
};

describe("DESIGN Adapters, spec §8: a send that fails after its client has gone is released", () => {
  for (const [name, make] of Object.entries(servers)) {
    it(`${name}: the cap of 1 is free again for another send`, async () => {
      const { failed, attempt } = failingFirst();
      const base = await listen(make(attempt));
      await sendAndLeave(base, "send-a_1");
      await failed; // the handler answered 500 to a client that had gone
      const other = await fetch(`${base}/articles/a_2/send`, { method: "POST", headers: { "idempotency-key": "send-a_2" } });
      expect(other.status).toBe(200);
      expect(other.headers.get("ratelimit-limit")).not.toBeNull();
    });

    it(`${name}: a send that succeeds after its client has gone stays counted`, async () => {
      const { failed, attempt } = failingFirst(200);
      const base = await listen(make(attempt));
      await sendAndLeave(base, "send-a_1");
      await failed;
      expect((await fetch(`${base}/articles/a_2/send`, { method: "POST" })).status).toBe(429);
    });
  }
});

describe("spec §1.2, §8.1: an adapter mounted twice on one request decides it once", () => {
  it("Express: on the app and on a router: the budgets and the cap charged once, a first keyed send is no replay", async () => {
    const seen: Decision[] = [];
    const mw = expressPolicy({ policy: policyOf(), who, newsletter });
    const app = express5();
    app.use(mw);
    const router = express5.Router();
    router.use(mw);
    router.get("/newsletters/:n/subscribers", (_req, res) => void res.json({}));
    router.post("/articles/:a/send", (_req, res) => {
      seen.push(res.locals.decision as Decision);
      res.json({});
    });
    app.use(router);
    const base = await listen(createServer(app));
    const read = await fetch(`${base}/newsletters/nl_1/subscribers`);
    expect(read.headers.get("ratelimit-remaining")).toBe("59");
    const send = await fetch(`${base}/articles/a_1/send`, { method: "POST", headers: { "idempotency-key": "k-1" } });
    expect(send.status).toBe(200);
    expect(seen[0]!.reason).toEqual({ rule: "allowed" });
    // the cap of 1 was charged once: a second send is refused by it, not a first
    const second = await fetch(`${base}/articles/a_2/send`, { method: "POST" });
    expect(second.status).toBe(429);
  });

  it("Hono: on the app and on a sub-app it mounts", async () => {
    const mw = honoPolicy({ policy: policyOf(), who, newsletter });
    const app = new Hono<PolicyEnv>();
    app.use(mw);
    const sub = new Hono<PolicyEnv>();
    sub.use(mw);
    sub.get("/newsletters/:n/subscribers", (c) => c.json({}));
    sub.post("/articles/:a/send", (c) => c.json({ replay: c.get("decision").reason.rule === "allowed" && "replay" in c.get("decision").reason }));
    app.route("/", sub);
    const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }) as Server;
    await new Promise((resolve) => server.once("listening", resolve));
    closers.push(() => new Promise((resolve) => server.close(() => resolve())));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const read = await fetch(`${base}/newsletters/nl_1/subscribers`);
    expect(read.headers.get("ratelimit-remaining")).toBe("59");
    const send = await fetch(`${base}/articles/a_1/send`, { method: "POST", headers: { "idempotency-key": "k-1" } });
    expect(await send.json()).toEqual({ replay: false });
    expect((await fetch(`${base}/articles/a_2/send`, { method: "POST" })).status).toBe(429);
  });

  it("found by a review: the same request object sent on to another path is decided again, and another policy decides with its own budgets", async () => {
    const reader = { credential: key({ nl_1: { content: "read" } }, false, "key_reader"), roles: { nl_1: "owner" } };
    const app = express5();
    app.use(expressPolicy({ policy: policyOf(), who: () => reader, newsletter }));
    // a second policy with an audience budget of 1, mounted after the first
    const tight = createPolicy({ store: new MemoryStore(), config: { docsUrl: "https://docs.example/errors", budgets: { audience: { limit: 1, window: 60 } } } });
    app.use(expressPolicy({ policy: tight, who: () => ({ ...reader, credential: key({ nl_1: { content: "read", audience: "read" } }, false, "key_reader") }), newsletter }));
    app.get("/newsletters/:nl/articles", (req, res, next) => {
      if (req.query.as !== "subs") return void res.json({});
      // an internal re-dispatch with a changed URL
      req.url = `/newsletters/${req.params.nl}/subscribers`;
      (app as unknown as { handle: (req: unknown, res: unknown, next: unknown) => void }).handle(req, res, next);
    });
    app.get("/newsletters/:nl/subscribers", (_req, res) => void res.json({ subscribers: [] }));
    const base = await listen(createServer(app));
    // the first policy refuses the reader (no audience: read) at the re-dispatched path
    expect((await fetch(`${base}/newsletters/nl_1/articles?as=subs`)).status).toBe(403);
    expect((await fetch(`${base}/newsletters/nl_1/subscribers`)).status).toBe(403);
  });

  it("found by a review: two adapters of two policies each charge their own budgets", async () => {
    const reader = { credential: key({ nl_1: { content: "read", audience: "read" } }, false, "key_two"), roles: { nl_1: "owner" } };
    const loose = policyOf();
    const tight = createPolicy({ store: new MemoryStore(), config: { docsUrl: "https://docs.example/errors", budgets: { audience: { limit: 1, window: 60 } } } });
    const app = express5();
    app.use(expressPolicy({ policy: loose, who: () => reader }));
    app.use(expressPolicy({ policy: tight, who: () => reader }));
    app.get("/newsletters/:nl/subscribers", (_req, res) => void res.json({}));
    const base = await listen(createServer(app));
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`${base}/newsletters/nl_1/subscribers`)).status);
    expect(statuses).toEqual([200, 429, 429]);
  });

  it("node:http: the guard called twice on one request answers the same decision", async () => {
    const guard = nodePolicy({ policy: policyOf(), who, newsletter });
    let again: Decision | undefined;
    const base = await listen(
      createServer(async (req, res) => {
        const first = await guard(req, res, undefined);
        again = await guard(req, res, undefined);
        expect(again).toBe(first);
        res.end();
      }),
    );
    const read = await fetch(`${base}/newsletters/nl_1/subscribers`);
    expect(read.headers.get("ratelimit-remaining")).toBe("59");
    expect(again?.allowed).toBe(true);
  });
});
