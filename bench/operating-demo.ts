/**
 * `npx tsx bench/operating-demo.ts`: plans, a reset, and a Redis outage under load with an
 * insurance store, on a redis-server of the demo's own (port 6401, stopped by PID).
 */
import { Redis } from "ioredis";
import { createPolicy, MemoryStore, type Decision, type Limits } from "../src/index.js";
import { RedisStore } from "../src/redis/index.js";
import { startRedis } from "../test/operating/redis-server.js";

const PORT = 6401;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const grants = { nl_1: { audience: "read", sending: "write", content: "write" } } as const;
const free = { id: "key_free", kind: "api_key" as const, newsletters: grants };
const paid = { id: "key_paid", kind: "api_key" as const, newsletters: grants };
const PLANS: Record<string, Limits> = {
  free: { budgets: { audience: { limit: 5, window: 60 } }, caps: { dispatch: { limit: 2 } } },
  paid: { budgets: { audience: { limit: 20, window: 60 } }, caps: { dispatch: { limit: 10 } } },
};
const roles = { nl_1: "owner" };
const read = { method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" };

let server = await startRedis(PORT);
// whatever happens, the demo's own redis-server does not outlive it (stopped by its PID)
process.on("exit", () => {
  try {
    process.kill(server.pid, "SIGKILL");
  } catch {
    // already stopped
  }
});
const redis = new Redis({ port: PORT, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 100 });
redis.on("error", () => {});
await redis.connect(); // with the offline queue off, commands sent before the connection is up fail (and would be insured)
const tally = new Map<string, number>();
const policy = createPolicy({
  store: new RedisStore({ redis: (command, args) => redis.call(command, args), prefix: `demo:${process.pid}:`, timeoutMs: 200, retries: 0 }),
  insurance: { store: new MemoryStore(), share: 0.5 },
  onDecision: (d) => {
    const k = d.degraded ? `${d.status} degraded` : d.reason.rule === "store_unavailable" ? "503" : `${d.status}`;
    tally.set(k, (tally.get(k) ?? 0) + 1);
  },
});

console.log(`redis-server pid ${server.pid} on port ${PORT}\n\n1. Plans: 8 audience reads each`);
for (const [credential, plan] of [[free, "free"], [paid, "paid"]] as const) {
  const ds: Decision[] = [];
  for (let i = 0; i < 8; i++) ds.push(await policy.check(read, { credential, roles, limits: PLANS[plan] }));
  console.log(`   ${plan}: ${ds.map((d) => d.status + (d.degraded ? "*" : "")).join(" ")}   RateLimit-Policy: ${ds[0]!.headers["RateLimit-Policy"]}`);
  console.log(`         last: RateLimit-Limit ${ds[7]!.headers["RateLimit-Limit"]}, Remaining ${ds[7]!.headers["RateLimit-Remaining"]}${ds[7]!.allowed ? "" : `, Retry-After ${ds[7]!.headers["Retry-After"]}: ${ds[7]!.body!.error.message}`}`);
}
const status = await policy.status(paid, { limits: PLANS.paid });
console.log(`   GET /rate-limit (paid): audience ${JSON.stringify(status.budgets.audience)}`);

console.log("\n2. Reset");
const before = await policy.check(read, { credential: free, roles, limits: PLANS.free });
await policy.reset({ credential: free });
const after = await policy.check(read, { credential: free, roles, limits: PLANS.free });
const paidAfter = await policy.check(read, { credential: paid, roles, limits: PLANS.paid });
console.log(`   free before reset: ${before.status}; after reset({ credential: free }): ${after.status} (Remaining ${after.headers["RateLimit-Remaining"]}); paid untouched: Remaining ${paidAfter.headers["RateLimit-Remaining"]}`);
for (let i = 0; i < 3; i++) await policy.check({ method: "POST", path: `/articles/a_${i}/send`, newsletter: "nl_1" }, { credential: free, roles, limits: PLANS.free });
const capped = await policy.check({ method: "POST", path: "/articles/a_9/send", newsletter: "nl_1" }, { credential: free, roles, limits: PLANS.free });
await policy.reset({ newsletter: "nl_1" });
const sendAgain = await policy.check({ method: "POST", path: "/articles/a_9/send", newsletter: "nl_1" }, { credential: free, roles, limits: PLANS.free });
console.log(`   send with today's 2 dispatches used: ${capped.status}; after reset({ newsletter: "nl_1" }): ${sendAgain.status}`);

console.log("\n3. Redis killed and restarted under load (4 workers, 60 credentials on the paid plan, insurance share 0.5)");
tally.clear();
const credentials = Array.from({ length: 60 }, (_, i) => ({ ...paid, id: `key_load_${i}` }));
let stop = false;
let n = 0;
const workers = Array.from({ length: 4 }, async (_, w) => {
  while (!stop) {
    await policy.check(read, { credential: credentials[(n++ * 4 + w) % credentials.length]!, roles, limits: PLANS.paid });
    await sleep(1);
  }
});
const phase = async (name: string, ms: number) => {
  tally.clear();
  await sleep(ms);
  console.log(`   ${name.padEnd(36)} ${[...tally].sort().map(([k, v]) => `${k}: ${v}`).join(", ")}`);
};
await phase("Redis up", 1500);
await server.stop();
console.log(`   (redis-server pid ${server.pid} killed)`);
await phase("Redis down: insurance store", 1500);
server = await startRedis(PORT);
console.log(`   (redis-server restarted, pid ${server.pid})`);
await phase("Redis back: reconnecting, handed back", 1500);
await phase("Redis back", 1500);
stop = true;
await Promise.all(workers);
redis.disconnect();
await server.stop();
console.log(`\nredis-server pid ${server.pid} stopped`);
