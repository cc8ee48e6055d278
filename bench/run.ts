/**
 * `npm run bench`: decisions per second for `evaluate` and `policy.check` (MemoryStore) on an
 * allowed audience read and on refusals, beside rate-limiter-flexible's RateLimiterMemory doing the
 * same two-budget charge (general + audience) in the same run. Compare ratios, not absolute figures.
 */
import { RateLimiterMemory } from "rate-limiter-flexible";
import { createPolicy, defineConfig, emptyUsage, evaluate, MemoryStore, type Credential, type PolicyRequest, type Usage } from "../src/index.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const N = Number(process.env.BENCH_N ?? 200_000);

const big = defineConfig({ budgets: { general: { limit: 1e9, window: 60 }, audience: { limit: 1e9, window: 60 } } });
const spent = defineConfig({ budgets: { audience: { limit: 1, window: 3600 } } });
const reader: Credential = { id: "key_bench", kind: "api_key", newsletters: { nl_1: { audience: "read", insights: "read" } } };
const roles = { nl_1: "owner" };
const T0 = Date.UTC(2026, 10, 22, 10);
const allowedRead = { method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" };
const forbidden = { method: "GET", path: "/newsletters/nl_1/articles" }; // 403 #1 (needs content: read), charged
const audienceRead = { method: "GET", path: "/newsletters/nl_1/subscribers" };

async function measure(name: string, n: number, run: (i: number) => unknown): Promise<number> {
  const best: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      const r = run(i);
      if (r instanceof Promise) await r;
    }
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    best.push(n / seconds);
  }
  best.sort((a, b) => b - a);
  const median = best[Math.floor(best.length / 2)]!;
  console.log(`${name.padEnd(58)} ${Math.round(median).toLocaleString("en").padStart(12)} ops/s   (${(1e6 / median).toFixed(2)} µs/op)`);
  return median;
}

function chain(config: typeof big, request: PolicyRequest, check: (status: number) => void) {
  let usage: Usage = emptyUsage();
  let now = T0;
  return () => {
    now += 1;
    const r = evaluate(request, { credential: reader, roles, usage, now, config });
    usage = r.usage;
    check(r.decision.status);
  };
}

const expect = (want: number) => (got: number) => {
  if (got !== want) throw new Error(`bench: expected ${want}, got ${got}`);
};

console.log(`node ${process.version}; ${ROUNDS} rounds of ${N.toLocaleString("en")} decisions, median round\n`);

const evalAllowed = await measure("evaluate: allowed audience read (immer snapshot)", N, chain(big, allowedRead, expect(200)));
{
  // one snapshot shared by 5 000 credentials (a pure reducer or actor holding a whole tenant)
  const many: Credential[] = Array.from({ length: 5_000 }, (_, i) => ({ ...reader, id: `key_${i}` }));
  let usage: Usage = emptyUsage();
  for (const credential of many) usage = evaluate(allowedRead, { credential, roles, usage, now: T0, config: big }).usage;
  let t = T0;
  await measure("evaluate: allowed read, 5 000 credentials in the snapshot", N / 4, (i) => {
    t += 1;
    const r = evaluate(allowedRead, { credential: many[i % many.length]!, roles, usage, now: t, config: big });
    usage = r.usage;
    expect(200)(r.decision.status);
  });
}
const evalForbidden = await measure("evaluate: refused 403 insufficient_scope #1 (charged)", N, chain(big, forbidden, expect(403)));
{
  const first = evaluate(audienceRead, { credential: reader, roles, usage: emptyUsage(), now: T0, config: spent });
  const usage = first.usage;
  await measure("evaluate: refused 429 audience spent (charges nothing)", N, (i) => {
    expect(429)(evaluate(audienceRead, { credential: reader, roles, usage, now: T0 + i / 1000, config: spent }).decision.status);
  });
}

let now = T0;
const policy = createPolicy({ store: new MemoryStore(), config: big, clock: () => now, generateId: () => "bench" });
const who = { credential: reader, roles };
const checkAllowed = await measure("policy.check (MemoryStore): allowed audience read", N, async () => {
  now += 1;
  expect(200)((await policy.check(allowedRead, who)).status);
});
await measure("policy.check (MemoryStore): refused 403 #1 (charged)", N, async () => {
  now += 1;
  expect(403)((await policy.check(forbidden, who)).status);
});
const spentPolicy = createPolicy({ store: new MemoryStore(), config: spent, clock: () => T0, generateId: () => "bench" });
await spentPolicy.check(audienceRead, who);
await measure("policy.check (MemoryStore): refused 429 audience spent", N, async () => {
  expect(429)((await spentPolicy.check(audienceRead, who)).status);
});

// The peer: two RateLimiterMemory budgets charged all or nothing (consume both; undo the first
// if the second refuses), and nothing else: no routing, no permissions, no headers.
const general = new RateLimiterMemory({ points: 1e9, duration: 60, keyPrefix: "g" });
const audience = new RateLimiterMemory({ points: 1e9, duration: 60, keyPrefix: "a" });
const peer = await measure("rate-limiter-flexible RateLimiterMemory: 2 budgets only", N, async () => {
  await general.consume("key_bench");
  try {
    await audience.consume("key_bench");
  } catch (refusal) {
    await general.reward("key_bench");
    throw refusal;
  }
});

console.log(`\nratio policy.check / RateLimiterMemory (allowed, higher is better): ${(checkAllowed / peer).toFixed(2)}×`);
console.log(`ratio evaluate / RateLimiterMemory (allowed):                      ${(evalAllowed / peer).toFixed(2)}×`);
console.log(`ratio evaluate 403 / evaluate allowed:                             ${(evalForbidden / evalAllowed).toFixed(2)}×`);

await import("./telemetry.js"); // onDecision on vs off (bench/telemetry.ts)
