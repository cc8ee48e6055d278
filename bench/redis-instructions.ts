/**
 * `npm run bench:redis:instructions`: Redis's work per decision counted in CPU instructions, not
 * timed (issue 10). On a shared machine the timings of the other Redis benches move by 1.5–3× from
 * one hour to the next; an instruction count is the same from run to run within a few per cent,
 * whatever else the machine is doing, so it is how a change to a script is judged here.
 *
 * Starts a redis-server of its own under `valgrind --tool=callgrind` (port BENCH_CG_PORT, default
 * 6389; valgrind is on every machine of this project), and for each row: runs a warm-up that opens
 * every window (1 000 credentials, as the race), zeroes callgrind's counters (`callgrind_control -z`),
 * runs the measured decisions or calls, dumps (`-d`) and reads the total. The count is every
 * instruction the server ran in that time: reading and parsing the commands, the scripts, the
 * replies (not the kernel's side of the socket). Stops the server by its PID at the end.
 *
 * Rows:
 * - the race's allowed decision, 1 000 credentials rotating: `policy.check` over `RedisStore`
 *   (default options) against the peer (`RateLimiterRedis` × 2), sequential and 64 in flight;
 * - the scripts for one plain charge (two budgets, no idempotency key, no cap), pipelined: `CHARGE`,
 *   `CHARGE_PLAIN`, and per charge in a `CHARGE_BATCH` of 16; and `CHARGE` for a charge with a cap.
 */
import { spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import { createPolicy, defineConfig, type Credential } from "../src/index.js";
import { RedisStore } from "../src/redis/index.js";
import { batchCall, CHARGE_BATCH } from "../src/redis/scripts/charge-batch.js";
import { CHARGE_PLAIN, plainChargeCall } from "../src/redis/scripts/charge-plain.js";
import { CHARGE, chargeCall, type ChargeCallInput } from "../src/redis/scripts/charge.js";
import type { Script, ScriptCall } from "../src/redis/scripts/script.js";
import { drive } from "./redis-common.js";
import { consumeBoth } from "./peer.js";

const PORT = Number(process.env.BENCH_CG_PORT ?? 6389);
const N = Number(process.env.BENCH_N ?? 2_000);
const CREDENTIALS = 1_000;
const LIMIT = 1_000_000_000;
const T0 = 1_795_548_035_160;
const dir = mkdtempSync(join(tmpdir(), "np-callgrind-"));

/** The server under callgrind, and its counters: zero, then the instructions run since. */
class CountedRedis {
  private readonly child = spawn(
    "valgrind",
    ["--tool=callgrind", `--callgrind-out-file=${join(dir, "out.%p")}`, "redis-server", "--port", String(PORT), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
    { stdio: ["ignore", "ignore", "ignore"] },
  );

  async ready(): Promise<void> {
    const until = Date.now() + 60_000;
    for (;;) {
      const probe = new Redis({ port: PORT, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on("error", () => {}); // refused until the server listens: the loop retries
      try {
        await probe.connect();
        await probe.ping();
        return;
      } catch (error) {
        if (Date.now() > until) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      } finally {
        probe.disconnect();
      }
    }
  }

  zero(): void {
    execFileSync("callgrind_control", ["-z", String(this.child.pid)], { stdio: "ignore" });
  }

  /** Instructions run since the last `zero` (a dump, read back). */
  count(): number {
    const before = new Set(readdirSync(dir));
    execFileSync("callgrind_control", ["-d", String(this.child.pid)], { stdio: "ignore" });
    const dump = readdirSync(dir).find((f) => f.startsWith("out.") && !before.has(f));
    if (dump === undefined) throw new Error("callgrind wrote no dump");
    const total = /^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, dump), "utf8"));
    if (total === null) throw new Error(`no total in ${dump}`);
    return Number(total[1]);
  }

  stop(): void {
    this.child.kill("SIGTERM");
  }
}

const credentials: Credential[] = Array.from({ length: CREDENTIALS }, (_, i) => ({ id: `key_${i}`, kind: "api_key", newsletters: { nl_1: { audience: "read" } } }));
const roles = { nl_1: "owner" };
const request = { method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" };

function ours(client: Redis, prefix: string): (i: number) => Promise<boolean> {
  const store = new RedisStore({ prefix, redis: (command, args) => client.call(command, args) });
  const config = defineConfig({ docsUrl: "https://bench.invalid/errors", budgets: { general: { limit: LIMIT, window: 60 }, audience: { limit: LIMIT, window: 60 } } });
  const policy = createPolicy({ store, config });
  return async (i) => (await policy.check(request, { credential: credentials[i % CREDENTIALS]!, roles })).allowed;
}

function peer(client: Redis, prefix: string): (i: number) => Promise<boolean> {
  const both = consumeBoth(
    new RateLimiterRedis({ storeClient: client, keyPrefix: `${prefix}general`, points: LIMIT, duration: 60 }),
    new RateLimiterRedis({ storeClient: client, keyPrefix: `${prefix}audience`, points: LIMIT, duration: 60 }),
  );
  return (i) => both(credentials[i % CREDENTIALS]!.id);
}

/** The race's charge `i` (credential i % 1 000, two budgets), a fresh nonce per call; with a cap when asked. */
function chargeInput(i: number, prefix: string, cap: boolean): ChargeCallInput {
  const budgets = ["general", "audience"].map((b) => ({ key: `b:${i % CREDENTIALS}:${b}`, limit: LIMIT, windowMs: 60_000 }));
  const dispatch = cap ? { name: "dispatch" as const, key: `d:${i % CREDENTIALS}`, day: 1, limit: LIMIT, resetAt: T0 + 86_400_000, offsetMs: 0 } : undefined;
  return { clock: "h", now: T0 + i, nonce: `n.${i}`, memoTtlMs: 60_000, refused: false, budgets, idempotency: undefined, cap: dispatch, memo: "memo", key: (k) => `${prefix}${k}` };
}

/** A script row: the script, how many charges one call carries, and call `i`'s KEYS and ARGV. */
type ScriptRow = [name: string, script: Script, perCall: number, call: (i: number, prefix: string) => ScriptCall];
const BATCH = 16;
const scriptRows: ScriptRow[] = [
  ["CHARGE, a plain charge", CHARGE, 1, (i, p) => chargeCall(chargeInput(i, p, false))],
  ["CHARGE_PLAIN, a plain charge (sent alone)", CHARGE_PLAIN, 1, (i, p) => plainChargeCall(chargeInput(i, p, false))],
  [`CHARGE_BATCH of ${BATCH} plain charges, per charge`, CHARGE_BATCH, BATCH, (i, p) => batchCall(Array.from({ length: BATCH }, (_, j) => chargeInput(i * BATCH + j, p, false)))],
  ["CHARGE, a charge with a cap", CHARGE, 1, (i, p) => chargeCall(chargeInput(i, p, true))],
];

async function pipelined(client: Redis, row: ScriptRow, prefix: string, from: number, calls: number): Promise<void> {
  const [, script, , call] = row;
  for (let start = from; start < from + calls; start += 50) {
    const pipeline = client.pipeline();
    for (let i = start; i < Math.min(from + calls, start + 50); i++) {
      const { keys, args } = call(i, prefix);
      pipeline.evalsha(script.sha, keys.length, ...keys, ...args);
    }
    for (const [error] of (await pipeline.exec())!) if (error) throw error;
  }
}

async function main(): Promise<void> {
  const server = new CountedRedis();
  let client: Redis | undefined;
  try {
    await server.ready();
    client = new Redis({ port: PORT });
    console.log(`redis-server under callgrind on port ${PORT}; ${N.toLocaleString("en")} measured decisions or charges per row, after a warm-up that opens every window`);
    console.log(`\n${"Redis instructions per decision".padStart(32)}  row`);
    const results = new Map<string, number>();
    for (const [mode, inFlight] of [["sequential", 1], ["64 in flight", 64]] as const) {
      for (const [name, make] of [["ours: policy.check over RedisStore", ours], ["peer: RateLimiterRedis ×2", peer]] as const) {
        const decide = make(client, `${mode}:${name}:`.replace(/\W/g, "") + ":");
        await drive(CREDENTIALS * 2, inFlight, decide);
        server.zero();
        const { allowed } = await drive(N, inFlight, decide);
        const perDecision = server.count() / N;
        if (allowed !== N) throw new Error(`${name}: ${N - allowed} refused`);
        results.set(`${mode}|${name}`, perDecision);
        console.log(`${perDecision.toFixed(0).padStart(32)}  ${mode}, ${name}`);
      }
      const ratio = results.get(`${mode}|ours: policy.check over RedisStore`)! / results.get(`${mode}|peer: RateLimiterRedis ×2`)!;
      console.log(`${`${ratio.toFixed(2)}×`.padStart(32)}  ${mode}, ours ÷ peer`);
    }
    console.log(`\n${"Redis instructions per charge".padStart(32)}  script (pipelined, 50 calls per pipeline)`);
    for (const row of scriptRows) {
      const [name, script, perCall] = row;
      await client.script("LOAD", script.source);
      const prefix = `script:${name.replace(/\W/g, "")}:`;
      await pipelined(client, row, prefix, 0, Math.ceil(CREDENTIALS / perCall) + 1);
      server.zero();
      const calls = Math.ceil(N / perCall);
      await pipelined(client, row, prefix, Math.ceil(CREDENTIALS / perCall) + 1, calls);
      console.log(`${(server.count() / (calls * perCall)).toFixed(0).padStart(32)}  ${name}`);
    }
  } finally {
    client?.disconnect();
    server.stop();
    await new Promise((resolve) => setTimeout(resolve, 500));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
