/**
 * Decisions per second against a local Redis: `policy.check` over RedisStore on a two-budget request
 * (GET /newsletters/nl_1/subscribers → general + audience) versus rate-limiter-flexible's
 * RateLimiterRedis doing the same all-or-nothing charge (consume general, consume audience; when
 * audience refuses, reward general). Same run, same client library (ioredis), sequential and with
 * requests in flight. Round trips are counted at the client (every command ioredis sends) and
 * cross-checked with Redis's INFO commandstats (EVALSHA + EVAL calls).
 *
 *   npm run bench:redis                   (REDIS_URL, BENCH_N, BENCH_CONCURRENCY, BENCH_ROUNDS change the defaults)
 *   BENCH_RTT_MS=1 npm run bench:redis    (through a proxy adding 1 ms per round trip, as a network would)
 *   BENCH_CLUSTER=0 npm run bench:redis   (skip the Redis Cluster rows)
 *
 * Then, unless BENCH_CLUSTER=0, the same on a Redis Cluster of its own (three primaries on ports
 * 7001–7003, started and stopped here): RedisStore { cluster: true } for a read (two budgets, one
 * round trip) and a send (budgets + the dispatch cap in another slot, two round trips) beside the
 * same on the single primary, and RateLimiterRedis ×2 on the same cluster.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { Cluster, Redis } from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import { createPolicy, type Credential } from "../src/index.js";
import { consumeBoth } from "./peer.js";
import { median } from "./stats.js";
import { cleanUp, drive, scriptStats } from "./redis-common.js";
import { RedisStore, type RedisCall } from "../src/redis/index.js";
import { OwnCluster } from "../test/redis/cluster/own-cluster.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
/** BENCH_RTT_MS > 0: talk to Redis through a proxy process that adds this round-trip time, as a network would. */
const RTT_MS = Number(process.env.BENCH_RTT_MS ?? 0);
const N = Number(process.env.BENCH_N ?? (RTT_MS > 0 ? 2_000 : 20_000));
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CREDENTIALS = 1_000;
const PREFIX = `np-bench:${process.pid}:`;
// Limits no run reaches, so both contenders take the common path: allowed, both budgets charged.
const LIMIT = 1_000_000_000;

let connectTo = REDIS_URL;

/**
 * A TCP proxy in its own process, delaying every chunk by half the round trip in each direction
 * (order kept: equal delays fire in order). Node's timers make that at least 1 ms per direction; the
 * bench prints the round trip it measures.
 */
const PROXY = `
const net = require("node:net");
const [host, port, half] = [process.env.H, Number(process.env.P), Number(process.env.D)];
const server = net.createServer((client) => {
  const upstream = net.connect(port, host);
  client.setNoDelay(true); upstream.setNoDelay(true);
  const relay = (from, to) => from.on("data", (chunk) => setTimeout(() => to.write(chunk), half));
  relay(client, upstream); relay(upstream, client);
  const close = () => { client.destroy(); upstream.destroy(); };
  client.on("error", close); upstream.on("error", close); client.on("close", close); upstream.on("close", close);
});
server.listen(0, "127.0.0.1", () => process.send(server.address().port));
`;

async function startProxy(): Promise<ChildProcess> {
  const target = new URL(REDIS_URL);
  const child = spawn(process.execPath, ["-e", PROXY], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    env: { ...process.env, H: target.hostname, P: target.port || "6379", D: String(RTT_MS / 2) },
  });
  const [port] = (await once(child, "message")) as [number];
  connectTo = `redis://127.0.0.1:${port}`;
  return child;
}

/** An ioredis connection that counts the commands it sends (each awaited command is a round trip). */
function counted(): Redis & { sent: number } {
  const client = new Redis(connectTo) as Redis & { sent: number };
  client.sent = 0;
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((...args: Parameters<Redis["sendCommand"]>) => {
    client.sent++;
    return send(...args);
  }) as Redis["sendCommand"];
  return client;
}

const credentials: Credential[] = Array.from({ length: CREDENTIALS }, (_, i) => ({ id: `key_${i}`, kind: "api_key", newsletters: { nl_1: { audience: "read" } } }));
const roles = { nl_1: "owner" };
const request = { method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" };

type Decide = (i: number) => Promise<boolean>;

interface Contender {
  name: string;
  client: Redis & { sent: number };
  decide: Decide;
}

async function npContender(): Promise<Contender> {
  const client = counted();
  const store = new RedisStore({ redis: (command, args) => client.call(command, args), prefix: `${PREFIX}np:` });
  const policy = createPolicy({ store, config: { budgets: { general: { limit: LIMIT, window: 60 }, audience: { limit: LIMIT, window: 60 } } } });
  return {
    name: "newsletter-policy RedisStore (policy.check)",
    client,
    decide: async (i) => (await policy.check(request, { credential: credentials[i % CREDENTIALS]!, roles })).allowed,
  };
}

async function rlfContender(): Promise<Contender> {
  const client = counted();
  const general = new RateLimiterRedis({ storeClient: client, keyPrefix: `${PREFIX}rlf:general`, points: LIMIT, duration: 60 });
  const audience = new RateLimiterRedis({ storeClient: client, keyPrefix: `${PREFIX}rlf:audience`, points: LIMIT, duration: 60 });
  const both = consumeBoth(general, audience);
  return {
    name: "rate-limiter-flexible RateLimiterRedis ×2",
    client,
    decide: (i) => both(credentials[i % CREDENTIALS]!.id),
  };
}

interface Result {
  opsPerSecond: number;
  roundTrips: number;
  /** EVALSHA + EVAL calls Redis counted (INFO commandstats), per decision. */
  scriptCalls: number;
  allowed: number;
}

async function measure(c: Contender, admin: Redis, n: number, inFlight: number): Promise<Result> {
  const sentBefore = c.client.sent;
  const statsBefore = (await scriptStats(admin)).calls;
  const { seconds, allowed } = await drive(n, inFlight, c.decide);
  const statsAfter = (await scriptStats(admin)).calls;
  return { opsPerSecond: n / seconds, roundTrips: (c.client.sent - sentBefore) / n, scriptCalls: (statsAfter - statsBefore) / n, allowed };
}

async function main(): Promise<void> {
  const proxy = RTT_MS > 0 ? await startProxy() : undefined;
  const admin = new Redis(REDIS_URL);
  const contenders = [await npContender(), await rlfContender()];
  console.log(`Redis ${(await admin.info("server")).match(/redis_version:(\S+)/)?.[1]} at ${REDIS_URL}${proxy ? ` through a proxy adding ${RTT_MS} ms per round trip` : ""}; Node ${process.version}; ${N} decisions per run, median of ${ROUNDS} rounds; ${CREDENTIALS} credentials; every decision allowed (limits out of reach)`);
  for (const c of contenders) await measure(c, admin, 2_000, 8); // warm-up: JIT, script cache, connections
  const pinger = contenders[0]!.client;
  const t0 = performance.now();
  for (let i = 0; i < 200; i++) await pinger.ping();
  console.log(`measured round trip (PING): ${((performance.now() - t0) / 200).toFixed(3)} ms`);

  // ROUNDS rounds, alternating the order, and the median of each: this box may be busy with other work
  const samples = new Map<string, { mode: string; name: string; runs: Result[] }>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [mode, inFlight] of [["sequential", 1], [`${CONCURRENCY} in flight`, CONCURRENCY]] as const) {
      for (const c of (round + (inFlight > 1 ? 1 : 0)) % 2 === 0 ? contenders : [...contenders].reverse()) {
        const r = await measure(c, admin, N, inFlight);
        if (r.allowed !== N) throw new Error(`${c.name}: ${N - r.allowed} decisions refused; the bench measures the allowed path`);
        const key = `${mode}/${c.name}`;
        if (!samples.has(key)) samples.set(key, { mode, name: c.name, runs: [] });
        samples.get(key)!.runs.push(r);
      }
    }
  }
  const rows = [...samples.values()].map(({ mode, name, runs }) => ({
    mode,
    name,
    all: runs.map((r) => r.opsPerSecond),
    r: { opsPerSecond: median(runs.map((r) => r.opsPerSecond)), roundTrips: median(runs.map((r) => r.roundTrips)), scriptCalls: median(runs.map((r) => r.scriptCalls)), allowed: N },
  }));

  console.log("");
  console.log(["mode".padEnd(15), "contender".padEnd(44), "decisions/s".padStart(12), "round trips/decision".padStart(22), "EVALSHA+EVAL/decision".padStart(23), "  each round (decisions/s)"].join(" "));
  for (const { mode, name, r, all } of rows) {
    console.log([mode.padEnd(15), name.padEnd(44), r.opsPerSecond.toFixed(0).padStart(12), r.roundTrips.toFixed(2).padStart(22), r.scriptCalls.toFixed(2).padStart(23), "  " + all.map((x) => x.toFixed(0)).join(" ")].join(" "));
  }
  console.log("");
  for (const mode of new Set(rows.map((r) => r.mode))) {
    const np = rows.find((r) => r.mode === mode && r.name.startsWith("newsletter-policy"));
    const rlf = rows.find((r) => r.mode === mode && r.name.startsWith("rate-limiter-flexible"));
    console.log(`${mode}: RedisStore / RateLimiterRedis×2 = ${(np!.r.opsPerSecond / rlf!.r.opsPerSecond).toFixed(2)}×`);
  }
  console.log("round trips: commands sent by the contender's ioredis connection; EVALSHA+EVAL: Redis INFO commandstats delta (both contenders charge through Lua scripts)");

  await cleanUp(admin, PREFIX);
  for (const c of contenders) c.client.disconnect();
  admin.disconnect();
  proxy?.kill();
}

/** Round trips counted at the store's call function (RedisStore) or the client's sendCommand (RateLimiterRedis). */
interface Counted {
  sent: number;
}

async function rate(decide: Decide, counter: Counted, n: number, inFlight: number): Promise<{ opsPerSecond: number; roundTrips: number }> {
  const before = counter.sent;
  const { seconds, allowed } = await drive(n, inFlight, decide);
  if (allowed !== n) throw new Error("refused: the bench measures the allowed path");
  return { opsPerSecond: n / seconds, roundTrips: (counter.sent - before) / n };
}

async function clusterBench(): Promise<void> {
  const cluster = new OwnCluster(false); // no persistence, as the single primary
  await cluster.start();
  const io = new Cluster([{ host: "127.0.0.1", port: 7001 }]);
  const single = new Redis(REDIS_URL);
  const n = Math.max(2_000, Math.floor(N / 2));
  try {
    const sendCredentials: Credential[] = Array.from({ length: CREDENTIALS }, (_, i) => ({ id: `key_${i}`, kind: "api_key", newsletters: Object.fromEntries(Array.from({ length: 50 }, (_, j) => [`nl_${j}`, { sending: "write" as const, audience: "read" as const }])) }));
    const sendRoles = Object.fromEntries(Array.from({ length: 50 }, (_, j) => [`nl_${j}`, "owner"]));
    const config = { budgets: { general: { limit: LIMIT, window: 60 }, audience: { limit: LIMIT, window: 60 }, write: { limit: LIMIT, window: 60 } }, caps: { dispatch: { limit: LIMIT } } };
    const contender = (name: string, call: RedisCall, clusterMode: boolean, kind: "read" | "send") => {
      const counter: Counted = { sent: 0 };
      const counting: RedisCall = (command, args) => {
        counter.sent++;
        return call(command, args);
      };
      const policy = createPolicy({ store: new RedisStore({ redis: counting, prefix: `${PREFIX}c:${name}:`, cluster: clusterMode }), config });
      const decide: Decide =
        kind === "read"
          ? async (i) => (await policy.check({ method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" }, { credential: sendCredentials[i % CREDENTIALS]!, roles: sendRoles })).allowed
          : async (i) => (await policy.check({ method: "POST", path: `/articles/a_${i}/send`, newsletter: `nl_${i % 50}` }, { credential: sendCredentials[i % CREDENTIALS]!, roles: sendRoles })).allowed;
      return { name, decide, counter };
    };
    const rlfCounter: Counted = { sent: 0 };
    const send = io.sendCommand.bind(io);
    io.sendCommand = ((...args: Parameters<Cluster["sendCommand"]>) => {
      rlfCounter.sent++;
      return send(...args);
    }) as Cluster["sendCommand"];
    const general = new RateLimiterRedis({ storeClient: io, keyPrefix: `${PREFIX}rlf:general`, points: LIMIT, duration: 60 });
    const audience = new RateLimiterRedis({ storeClient: io, keyPrefix: `${PREFIX}rlf:audience`, points: LIMIT, duration: 60 });
    const rlfBoth = consumeBoth(general, audience);
    const rlfDecide: Decide = (i) => rlfBoth(credentials[i % CREDENTIALS]!.id);
    const ioCall: RedisCall = (command, args) => io.call(command, args);
    const singleCall: RedisCall = (command, args) => single.call(command, args);
    const rows = [
      contender("RedisStore, single primary: read (2 budgets)", singleCall, false, "read"),
      contender("RedisStore, cluster: read (2 budgets)", ioCall, true, "read"),
      contender("RedisStore, single primary: send (2 budgets + cap)", singleCall, false, "send"),
      contender("RedisStore, cluster: send (2 budgets + cap)", ioCall, true, "send"),
      { name: "RateLimiterRedis ×2, cluster: read (2 budgets)", decide: rlfDecide, counter: rlfCounter },
    ];
    for (const r of rows) await rate(r.decide, r.counter, 1_000, 8); // warm-up
    console.log(`\nRedis Cluster (three primaries on loopback, ports 7001–7003, ioredis Cluster) vs the single primary at ${REDIS_URL}; ${n} decisions per run, median of ${ROUNDS}`);
    console.log(["mode".padEnd(15), "contender".padEnd(52), "decisions/s".padStart(12), "round trips/decision".padStart(22)].join(" "));
    for (const [mode, inFlight] of [["sequential", 1], [`${CONCURRENCY} in flight`, CONCURRENCY]] as const) {
      for (const r of rows) {
        const runs: Array<{ opsPerSecond: number; roundTrips: number }> = [];
        for (let round = 0; round < ROUNDS; round++) runs.push(await rate(r.decide, r.counter, n, inFlight));
        runs.sort((a, b) => a.opsPerSecond - b.opsPerSecond);
        const m = runs[Math.floor(runs.length / 2)]!;
        console.log([mode.padEnd(15), r.name.padEnd(52), m.opsPerSecond.toFixed(0).padStart(12), m.roundTrips.toFixed(2).padStart(22)].join(" "));
      }
    }
    console.log("round trips: EVALSHA/EVAL sent by RedisStore's call function; for RateLimiterRedis, commands sent by the ioredis Cluster client");
    await cleanUp(single, PREFIX);
  } finally {
    io.disconnect();
    single.disconnect();
    await cluster.stop();
  }
}

await main();
if (process.env.BENCH_CLUSTER !== "0") await clusterBench();
