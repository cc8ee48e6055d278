/**
 * One request through each adapter beside the same server without it: the adapter's overhead per
 * request (its own work plus one policy.check over the in-memory store), over real HTTP on loopback.
 *
 *   npx tsx bench/adapters.ts            # NP_BENCH_N=4000 NP_BENCH_ROUNDS=5 NP_BENCH_C=8 to change
 *
 * Two measures. In process: the framework's own request path without a socket (a node
 * IncomingMessage/ServerResponse pair for node:http and Express, Fastify's inject, Hono's
 * app.request), CPU µs per request, the steadier figure. Over HTTP on loopback: a fetch client
 * against each server, CPU and wall µs per request. Client and server share one process, so the per-request times include the client's fetch; the
 * difference between the two servers is the adapter. Rounds alternate bare/guarded and the median
 * is reported. The CPU time of this process per request is the steadier figure on a shared, busy
 * machine (other processes do not add to it); wall time there moves by hundreds of µs between runs.
 */
import { createServer, IncomingMessage, ServerResponse, type RequestListener, type Server } from "node:http";
import { Socket, type AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import express from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import { newsletterPolicy as expressPolicy } from "../src/adapters/express.js";
import { newsletterPolicy as fastifyPolicy } from "../src/adapters/fastify.js";
import { newsletterPolicy as honoPolicy } from "../src/adapters/hono.js";
import { newsletterPolicy as nodePolicy } from "../src/adapters/node.js";
import { createPolicy, MemoryStore, type Credential, type Who } from "../src/index.js";

const N = Number(process.env.NP_BENCH_N ?? 4000);
const ROUNDS = Number(process.env.NP_BENCH_ROUNDS ?? 5);
const CONCURRENCY = Number(process.env.NP_BENCH_C ?? 8);
const PATH = "/newsletters/nl_1/articles?status=sent&limit=100";

const credential: Credential = { id: "key_bench", kind: "api_key", newsletters: { nl_1: { content: "read" } } };
const who: Who = { credential, roles: { nl_1: "owner" } };
// budgets large enough that no request of the run is refused
const policy = () => createPolicy({ store: new MemoryStore(), config: { budgets: { general: { limit: 1e9, window: 60 } } } });
const payload = { articles: [] as string[] };

interface Target {
  url: string;
  close(): Promise<void>;
}

function listening(server: Server): Promise<Target> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${PATH}`, close: () => new Promise((r) => server.close(() => r())) }),
    ),
  );
}

const servers: Record<string, (guarded: boolean) => Promise<Target>> = {
  "node:http": (guarded) => {
    const guard = nodePolicy({ policy: policy(), who: () => who });
    return listening(
      createServer(async (req, res) => {
        if (guarded && !(await guard(req, res))) return;
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(payload));
      }),
    );
  },
  "Express 5": (guarded) => {
    const app = express();
    if (guarded) app.use(expressPolicy({ policy: policy(), who: () => who }));
    app.get("/newsletters/:id/articles", (_req, res) => void res.json(payload));
    return listening(createServer(app));
  },
  "Fastify 5": async (guarded) => {
    const app = Fastify();
    if (guarded) await app.register(fastifyPolicy, { policy: policy(), who: () => who });
    app.get("/newsletters/:id/articles", async () => payload);
    await app.listen({ port: 0, host: "127.0.0.1" });
    return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}${PATH}`, close: () => app.close() };
  },
  "Hono 4": (guarded) => {
    const app = new Hono();
    if (guarded) app.use(honoPolicy({ policy: policy(), who: () => who }));
    app.get("/newsletters/:id/articles", (c) => c.json(payload));
    return new Promise((resolve) => {
      const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) =>
        resolve({ url: `http://127.0.0.1:${info.port}${PATH}`, close: () => new Promise((r) => server.close(() => r())) }),
      );
    });
  },
};

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Microseconds per request for n requests at the given concurrency: wall time, and this process's CPU time (user + system). */
async function measure(url: string, n: number): Promise<{ wall: number; cpu: number }> {
  let next = 0;
  const worker = async () => {
    while (next++ < n) {
      const response = await fetch(url);
      if (response.status !== 200) throw new Error(`${url}: ${response.status}`);
      await response.arrayBuffer();
    }
  };
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const wall = Number(process.hrtime.bigint() - start) / 1000 / n;
  const used = process.cpuUsage(cpu);
  return { wall, cpu: (used.user + used.system) / n };
}


// the decision alone, for reference: policy.check over the in-memory store, no HTTP
{
  const p = policy();
  const request = { method: "GET", path: PATH };
  for (let i = 0; i < 2000; i++) await p.check(request, who);
  const cpu = process.cpuUsage();
  for (let i = 0; i < 20000; i++) await p.check(request, who);
  const used = process.cpuUsage(cpu);
  console.log(`policy.check alone: ${((used.user + used.system) / 20000).toFixed(1)} µs CPU per call`);
}
/** A request through a node request listener, without a socket. */
function fakeRequest(listener: RequestListener): Promise<void> {
  const req = new IncomingMessage(new Socket());
  req.method = "GET";
  req.url = PATH;
  const res = new ServerResponse(req);
  return new Promise((done) => {
    const end = res.end.bind(res);
    res.end = ((...args: Parameters<ServerResponse["end"]>) => {
      done();
      return end(...args);
    }) as ServerResponse["end"];
    listener(req, res);
  });
}

const inProcess: Record<string, (guarded: boolean) => Promise<() => Promise<unknown>>> = {
  "node:http": async (guarded) => {
    const guard = nodePolicy({ policy: policy(), who: () => who });
    return () =>
      fakeRequest(async (req, res) => {
        if (guarded && !(await guard(req, res))) return;
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(payload));
      });
  },
  "Express 5": async (guarded) => {
    const app = express();
    if (guarded) app.use(expressPolicy({ policy: policy(), who: () => who }));
    app.get("/newsletters/:id/articles", (_req, res) => void res.json(payload));
    return () => fakeRequest(app);
  },
  "Fastify 5": async (guarded) => {
    const app = Fastify();
    if (guarded) await app.register(fastifyPolicy, { policy: policy(), who: () => who });
    app.get("/newsletters/:id/articles", async () => payload);
    await app.ready();
    return () => app.inject({ method: "GET", url: PATH });
  },
  "Hono 4": async (guarded) => {
    const app = new Hono();
    if (guarded) app.use(honoPolicy({ policy: policy(), who: () => who }));
    app.get("/newsletters/:id/articles", (c) => c.json(payload));
    return async () => (await app.request(PATH)).arrayBuffer();
  },
};

async function cpuPerCall(f: () => Promise<unknown>, n: number): Promise<number> {
  const cpu = process.cpuUsage();
  for (let i = 0; i < n; i++) await f();
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / n;
}

console.log(`in process, ${N * 2} requests per round, ${ROUNDS} rounds; CPU µs per request, median of rounds`);
console.log("framework   | without | with adapter | overhead");
for (const [name, make] of Object.entries(inProcess)) {
  const bare = await make(false);
  const guarded = await make(true);
  await cpuPerCall(bare, 2000);
  await cpuPerCall(guarded, 2000);
  const a: number[] = [];
  const b: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    a.push(await cpuPerCall(bare, N * 2));
    b.push(await cpuPerCall(guarded, N * 2));
  }
  const [x, y] = [median(a), median(b)];
  console.log(`${name.padEnd(11)} | ${x.toFixed(1).padStart(7)} | ${y.toFixed(1).padStart(12)} | ${(y - x).toFixed(1).padStart(5)} µs`);
}

console.log(`over HTTP, ${N} requests per round, ${ROUNDS} rounds, concurrency ${CONCURRENCY}, GET ${PATH}; µs per request, median of rounds`);
console.log("framework   | CPU without | CPU with | CPU overhead | wall without | wall with | wall overhead");
for (const [name, start] of Object.entries(servers)) {
  const bare = await start(false);
  const guarded = await start(true);
  await measure(bare.url, 500); // warm up both
  await measure(guarded.url, 500);
  const without: { wall: number; cpu: number }[] = [];
  const withAdapter: { wall: number; cpu: number }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    without.push(await measure(bare.url, N));
    withAdapter.push(await measure(guarded.url, N));
  }
  const cpuA = median(without.map((m) => m.cpu));
  const cpuB = median(withAdapter.map((m) => m.cpu));
  const wallA = median(without.map((m) => m.wall));
  const wallB = median(withAdapter.map((m) => m.wall));
  const f = (n: number, w: number) => n.toFixed(0).padStart(w);
  console.log(`${name.padEnd(11)} | ${f(cpuA, 11)} | ${f(cpuB, 8)} | ${f(cpuB - cpuA, 9)} µs | ${f(wallA, 12)} | ${f(wallB, 9)} | ${f(wallB - wallA, 10)} µs`);
  await bare.close();
  await guarded.close();
}
