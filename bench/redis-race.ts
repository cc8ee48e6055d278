/**
 * `npm run bench:redis:race`: the Redis rows of the performance race (issue 10), against a shared
 * Redis (127.0.0.1:6379 by default; REDIS_URL changes it). Keys live under a prefix unique to this
 * run and are deleted at the end with SCAN + UNLINK (never FLUSH).
 *
 * Contenders, each deciding the allowed audience read (two budgets: general + audience) for 1 000
 * credentials in rotation:
 * - ours: `policy.check` over RedisStore (default options), ioredis underneath;
 * - the peer: rate-limiter-flexible `RateLimiterRedis` × 2 (consume general, consume audience,
 *   reward general when audience refuses), on its own ioredis connection.
 *
 * BENCH_BATCH sets the store's `batch` (charges per round trip; 1 = none; default the store's 16).
 *
 * Per contender and mode (sequential; BENCH_CONCURRENCY = 64 in flight), in BENCH_ROUNDS (7)
 * interleaved rounds, order forward then reversed:
 * - decisions/s (median, spread), and the per-round ratio ours ÷ peer (median);
 * - round trips per decision: every call through ours' narrow `redis` call function, every command
 *   rlf's ioredis connection sends;
 * - Redis-side time per decision: the delta of `usec` of `cmdstat_evalsha` + `cmdstat_eval` in
 *   `INFO commandstats`, ÷ decisions. The Redis is shared: other processes' scripts land in the same
 *   counters, so the bench also compares the delta of `calls` with the calls it made itself, and
 *   reports µs per script call × own calls per decision (robust to that noise) beside the raw figure.
 */
import { Redis } from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import { createPolicy, defineConfig, type Credential } from "../src/index.js";
import { consumeBoth } from "./peer.js";
import { load, median } from "./stats.js";
import { cleanUp, drive, scriptStats } from "./redis-common.js";
import { RedisStore } from "../src/redis/index.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const N = Number(process.env.BENCH_N ?? 10_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const ROUNDS = Math.max(7, Number(process.env.BENCH_ROUNDS ?? 7));
const CREDENTIALS = 1_000;
const PREFIX = `np-race:${process.pid}:${Date.now()}:`;
const LIMIT = 1_000_000_000;

const credentials: Credential[] = Array.from({ length: CREDENTIALS }, (_, i) => ({ id: `key_${i}`, kind: "api_key", newsletters: { nl_1: { audience: "read" } } }));
const roles = { nl_1: "owner" };
const request = { method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" };

interface Contender {
  name: string;
  /** Commands sent to Redis so far (round trips), and how many of those were EVAL/EVALSHA. */
  sent: () => { all: number; scripts: number };
  decide: (i: number) => Promise<boolean>;
  client: Redis;
}

function ours(): Contender {
  const client = new Redis(REDIS_URL);
  let all = 0;
  let scripts = 0;
  const store = new RedisStore({
    prefix: `${PREFIX}np:`,
    // BENCH_BATCH: the store's `batch` (charges per round trip; 1 = none), default the store's own
    ...(process.env.BENCH_BATCH === undefined ? {} : { batch: Number(process.env.BENCH_BATCH) }),
    redis: (command, args) => {
      all++;
      if (/^eval(sha)?$/i.test(command)) scripts++;
      return client.call(command, args);
    },
  });
  const config = defineConfig({ docsUrl: "https://bench.invalid/errors", budgets: { general: { limit: LIMIT, window: 60 }, audience: { limit: LIMIT, window: 60 } } });
  const policy = createPolicy({ store, config });
  return {
    name: "ours: policy.check over RedisStore",
    client,
    sent: () => ({ all, scripts }),
    decide: async (i) => (await policy.check(request, { credential: credentials[i % CREDENTIALS]!, roles })).allowed,
  };
}

function peer(): Contender {
  const client = new Redis(REDIS_URL);
  let all = 0;
  let scripts = 0;
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((...args: Parameters<Redis["sendCommand"]>) => {
    all++;
    if (/^eval(sha)?$/i.test(args[0].name)) scripts++;
    return send(...args);
  }) as Redis["sendCommand"];
  const general = new RateLimiterRedis({ storeClient: client, keyPrefix: `${PREFIX}rlf:general`, points: LIMIT, duration: 60 });
  const audience = new RateLimiterRedis({ storeClient: client, keyPrefix: `${PREFIX}rlf:audience`, points: LIMIT, duration: 60 });
  const both = consumeBoth(general, audience);
  return {
    name: "peer: RateLimiterRedis ×2",
    client,
    sent: () => ({ all, scripts }),
    decide: (i) => both(credentials[i % CREDENTIALS]!.id),
  };
}

interface Sample {
  perSecond: number;
  roundTrips: number;
  /** Redis-side µs per decision, raw delta of evalsha+eval usec ÷ decisions (includes other clients' scripts). */
  redisUs: number;
  /** µs per script call (delta usec ÷ delta calls) × own script calls per decision. */
  redisUsOwn: number;
  /** script calls Redis counted that were not ours, per decision. */
  foreign: number;
}

async function measure(c: Contender, admin: Redis, n: number, inFlight: number): Promise<Sample> {
  const s0 = c.sent();
  const r0 = await scriptStats(admin);
  const { seconds, allowed } = await drive(n, inFlight, c.decide);
  const r1 = await scriptStats(admin);
  const s1 = c.sent();
  if (allowed !== n) throw new Error(`${c.name}: ${n - allowed} refused; the bench measures the allowed path`);
  const ownScripts = s1.scripts - s0.scripts;
  const calls = r1.calls - r0.calls;
  const usec = r1.usec - r0.usec;
  return {
    perSecond: n / seconds,
    roundTrips: (s1.all - s0.all) / n,
    redisUs: usec / n,
    redisUsOwn: calls > 0 ? (usec / calls) * (ownScripts / n) : 0,
    foreign: (calls - ownScripts) / n,
  };
}


async function main(): Promise<void> {
  const admin = new Redis(REDIS_URL);
  const contenders = [ours(), peer()];
  try {
    console.log(`Redis ${(await admin.info("server")).match(/redis_version:(\S+)/)?.[1]} at ${REDIS_URL}; node ${process.version}; load average ${await load()}`);
    console.log(`${ROUNDS} interleaved rounds (forward, reversed, …) of ${N.toLocaleString("en")} allowed decisions per contender and mode; ${CREDENTIALS} credentials rotating; key prefix ${PREFIX}`);
    for (const c of contenders) await measure(c, admin, 2_000, 8); // warm-up: JIT, script cache, connections
    const modes = [["sequential", 1], [`${CONCURRENCY} in flight`, CONCURRENCY]] as const;
    const samples = new Map<string, Sample[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const [mode, inFlight] of modes) {
        for (const c of round % 2 === 0 ? contenders : [...contenders].reverse()) {
          const key = `${mode}|${c.name}`;
          if (!samples.has(key)) samples.set(key, []);
          samples.get(key)!.push(await measure(c, admin, N, inFlight));
        }
      }
    }
    console.log(`\n${"mode".padEnd(14)} ${"contender".padEnd(36)} ${"decisions/s".padStart(11)} ${"(min–max)".padStart(15)} ${"round trips".padStart(11)} ${"Redis µs/dec raw".padStart(17)} ${"Redis µs/dec own".padStart(17)} ${"foreign calls/dec".padStart(18)}`);
    for (const [key, runs] of samples) {
      const [mode, name] = key.split("|") as [string, string];
      const ps = runs.map((r) => r.perSecond);
      console.log(
        `${mode.padEnd(14)} ${name.padEnd(36)} ${median(ps).toFixed(0).padStart(11)} ${`${Math.min(...ps).toFixed(0)}–${Math.max(...ps).toFixed(0)}`.padStart(15)} ${median(runs.map((r) => r.roundTrips)).toFixed(2).padStart(11)} ${median(runs.map((r) => r.redisUs)).toFixed(1).padStart(17)} ${median(runs.map((r) => r.redisUsOwn)).toFixed(1).padStart(17)} ${median(runs.map((r) => r.foreign)).toFixed(2).padStart(18)}`,
      );
    }
    const [a, b] = contenders.map((c) => c.name) as [string, string];
    const perRound = (mode: string, f: (s: Sample) => number) => median(samples.get(`${mode}|${a}`)!.map((s, r) => f(s) / f(samples.get(`${mode}|${b}`)![r]!)));
    console.log(`\n${"issue 10 Redis row".padEnd(62)} ${"today".padStart(24)}  goal`);
    const seqOwn = (name: string) => median(samples.get(`sequential|${name}`)!.map((s) => s.redisUsOwn));
    console.log(`${"Redis-side time per decision (INFO commandstats), sequential".padEnd(62)} ${`${seqOwn(a).toFixed(1)} µs (peer ${seqOwn(b).toFixed(1)} µs)`.padStart(24)}  ≤ 15 µs`);
    console.log(`${`decisions/s, ${CONCURRENCY} in flight, ours ÷ peer`.padEnd(62)} ${`${perRound(`${CONCURRENCY} in flight`, (s) => s.perSecond).toFixed(2)}×`.padStart(24)}  ≥ 1.5×`);
    console.log(`${"decisions/s, sequential, ours ÷ peer".padEnd(62)} ${`${perRound("sequential", (s) => s.perSecond).toFixed(2)}×`.padStart(24)}  ≥ 1.5×`);
    console.log(`\nRedis µs/dec raw: Δusec(evalsha+eval) ÷ decisions, includes other clients' scripts during the run (foreign calls/dec > 0 says how many);`);
    console.log(`Redis µs/dec own: Δusec ÷ Δcalls × own script calls per decision. load average at the end: ${await load()}`);
  } finally {
    await cleanUp(admin, PREFIX);
    for (const c of contenders) c.client.disconnect();
    admin.disconnect();
  }
}

await main();
