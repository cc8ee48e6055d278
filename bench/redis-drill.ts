/**
 * Stall drill (issue 8, defect 3): ~2 000 requests/s through `createPolicy` over `RedisStore`, against
 * a redis-server of our own (port 6385) that is paused (SIGSTOP), resumed, killed (SIGKILL) and
 * restarted under load. The client is ioredis at its defaults (offline queue on, no commandTimeout,
 * resend after reconnect): the set-up that piled up 80 000 commands before. Reports per phase:
 * decisions by status, the most calls pending in the store (`store.inFlight`), heap, and at the end
 * of each Redis lifetime whether Redis counted exactly the requests that were answered (no charge
 * from a request answered 503), and the dispatch cap's admitted vs limit.
 *
 *   npx tsx bench/redis-drill.ts        (DRILL_RATE=2000 DRILL_MAX_IN_FLIGHT=1000 DRILL_PORT=6385)
 */
import { Redis } from "ioredis";
import { createPolicy, type Credential, type Decision } from "../src/index.js";
import { RedisStore } from "../src/redis/index.js";
import { OwnRedis } from "../test/redis/server.js";

const RATE = Number(process.env.DRILL_RATE ?? 2_000);
const MAX_IN_FLIGHT = Number(process.env.DRILL_MAX_IN_FLIGHT ?? 1_000);
const PORT = Number(process.env.DRILL_PORT ?? 6385);
const CAP = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const server = new OwnRedis(PORT);
await server.start();
const redis = new Redis({ port: PORT, host: "127.0.0.1" });
redis.on("error", () => {});
const store = new RedisStore({ redis: (command, args) => redis.call(command, args), prefix: "drill:", maxInFlight: MAX_IN_FLIGHT });
const policy = createPolicy({
  store,
  config: { budgets: { general: { limit: 1_000_000, window: 3_600 }, write: { limit: 1_000_000, window: 3_600 } }, caps: { dispatch: { limit: CAP } } },
});
const credentials: Credential[] = Array.from({ length: 100 }, (_, i) => ({ id: `key_${i}`, kind: "api_key", newsletters: { nl_drill: { sending: "write", content: "read" } } }));

interface Phase {
  name: string;
  ms: number;
  before?: () => void | Promise<void>;
}
interface Row {
  phase: string;
  sent: number;
  by: Record<number, number>;
  maxPending: number;
  heapMb: number;
}

let answered = 0; // decisions that were not 503 since the current Redis started: each charged general once
let allowedSends = 0;
let n = 0;
const inFlightChecks = new Set<Promise<Decision>>();

async function phase(p: Phase): Promise<Row> {
  await p.before?.();
  const row: Row = { phase: p.name, sent: 0, by: {}, maxPending: 0, heapMb: 0 };
  const perTick = RATE / 100;
  const end = Date.now() + p.ms;
  while (Date.now() < end) {
    for (let i = 0; i < perTick; i++) {
      const k = n++;
      const who = { credential: credentials[k % 100]!, roles: { nl_drill: "owner" } };
      const request = k % 10 === 0 ? { method: "POST", path: `/articles/a_${k}/send`, newsletter: "nl_drill" } : { method: "GET", path: "/newsletters/nl_drill/articles" };
      const check = policy.check(request, who);
      inFlightChecks.add(check);
      row.sent++;
      void check.then((d) => {
        inFlightChecks.delete(check);
        row.by[d.status] = (row.by[d.status] ?? 0) + 1;
        if (d.status !== 503) answered++;
        if (d.allowed && d.release) allowedSends++;
      });
    }
    row.maxPending = Math.max(row.maxPending, store.inFlight);
    row.heapMb = Math.max(row.heapMb, process.memoryUsage().heapUsed / 1e6);
    await sleep(10);
  }
  await Promise.all(inFlightChecks);
  return row;
}

async function countedByRedis(): Promise<{ general: number; capMembers: number }> {
  const deadline = Date.now() + 30_000;
  while (store.inFlight > 0 && Date.now() < deadline) await sleep(20); // let Redis run (and refuse) every late command
  let general = 0;
  for (const key of await redis.keys("drill:b:*:general")) general += Number(await redis.hget(key, "c"));
  let capMembers = 0;
  for (const key of await redis.keys("drill:d:*")) if (!key.endsWith(":day")) capMembers += await redis.scard(key);
  return { general, capMembers };
}

const rows: Row[] = [];
const checks: string[] = [];
async function verify(label: string): Promise<void> {
  const counted = await countedByRedis();
  checks.push(
    `${label}: Redis counted ${counted.general} general charges for ${answered} answered (non-503) decisions → ${counted.general === answered ? "EXACT" : "MISMATCH"}; ` +
      `dispatch cap: ${allowedSends} admitted, ${counted.capMembers} counted, limit ${CAP} → ${allowedSends <= CAP && counted.capMembers === allowedSends ? "OK" : "OVER"}; pending after settle ${store.inFlight}`,
  );
}

try {
  rows.push(await phase({ name: "normal", ms: 3_000 }));
  rows.push(await phase({ name: "paused (SIGSTOP)", ms: 10_000, before: () => server.pause() }));
  rows.push(await phase({ name: "resumed (SIGCONT)", ms: 3_000, before: () => server.resume() }));
  await verify("after pause + resume");
  rows.push(await phase({ name: "killed (SIGKILL)", ms: 5_000, before: () => server.kill() }));
  rows.push(
    await phase({
      name: "restarted (empty)",
      ms: 5_000,
      before: async () => {
        answered = 0;
        allowedSends = 0;
        await server.start();
      },
    }),
  );
  await verify("after kill + restart (the data died with the process: counted since the restart)");
} finally {
  redis.disconnect();
  await server.stop();
}

console.log(`\nRedis stall drill: ${RATE} requests/s (90% GET /newsletters/nl_drill/articles over 100 credentials, 10% sends to one newsletter, cap ${CAP}), maxInFlight ${MAX_IN_FLIGHT}, timeoutMs 500, retries 1, ioredis defaults\n`);
console.log("| phase | requests | 200 | 429 | 503 | other | most pending calls | heap (max) |");
console.log("|---|---|---|---|---|---|---|---|");
for (const r of rows) console.log(`| ${r.phase} | ${r.sent} | ${r.by[200] ?? 0} | ${r.by[429] ?? 0} | ${r.by[503] ?? 0} | ${r.sent - (r.by[200] ?? 0) - (r.by[429] ?? 0) - (r.by[503] ?? 0)} | ${r.maxPending} | ${r.heapMb.toFixed(0)} MB |`);
console.log("");
for (const c of checks) console.log(`- ${c}`);
process.exit(0);
