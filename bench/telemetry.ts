/**
 * Telemetry cost: `policy.check` (MemoryStore) with and without an `onDecision` hook that counts
 * decisions by rule (what a metrics counter does), in interleaved rounds so that a noisy, shared
 * machine slows both alike. Reports the ratio; run alone with `npx tsx bench/telemetry.ts`, or as
 * part of `npm run bench`.
 */
import { createPolicy, defineConfig, MemoryStore, type Credential, type Decision } from "../src/index.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const N = Number(process.env.BENCH_N ?? 200_000);
const config = defineConfig({ budgets: { general: { limit: 1e9, window: 60 }, audience: { limit: 1e9, window: 60 } } });
const reader: Credential = { id: "key_bench", kind: "api_key", newsletters: { nl_1: { audience: "read" } } };
const who = { credential: reader, roles: { nl_1: "owner" } };
const read = { method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" };
const T0 = Date.UTC(2026, 10, 22, 10);

const counts = new Map<string, number>();
function count(decision: Decision): void {
  const name = decision.degraded ? `${decision.reason.rule}:degraded` : decision.reason.rule;
  counts.set(name, (counts.get(name) ?? 0) + 1);
}

const paid = { ...who, limits: { budgets: { audience: { limit: 1e8 } } } }; // one limits object per plan: validated once

async function round(onDecision: ((d: Decision) => void) | undefined, asking: typeof who = who): Promise<number> {
  let now = T0;
  const policy = createPolicy({ store: new MemoryStore(), config, clock: () => ++now, ...(onDecision && { onDecision }) });
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await policy.check(read, asking);
  return N / (Number(process.hrtime.bigint() - start) / 1e9);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const without: number[] = [];
const withHook: number[] = [];
const ratios: number[] = [];
const planned: number[] = [];
const planRatios: number[] = [];
await round(undefined); // warm up
await round(count);
for (let r = 0; r < ROUNDS; r++) {
  const a = await round(undefined);
  const b = await round(count);
  without.push(a);
  withHook.push(b);
  ratios.push(b / a);
  const c = await round(undefined, paid);
  planned.push(c);
  planRatios.push(c / a);
}
console.log(`\ntelemetry: ${ROUNDS} interleaved rounds of ${N.toLocaleString("en")} policy.check (MemoryStore, allowed read), median round`);
console.log(`policy.check without onDecision   ${Math.round(median(without)).toLocaleString("en").padStart(12)} ops/s   (${(1e6 / median(without)).toFixed(2)} µs/op)`);
console.log(`policy.check with onDecision       ${Math.round(median(withHook)).toLocaleString("en").padStart(12)} ops/s   (${(1e6 / median(withHook)).toFixed(2)} µs/op)`);
console.log(`ratio with / without (median of per-round ratios): ${median(ratios).toFixed(3)}×  (counted ${[...counts.values()].reduce((a, b) => a + b, 0).toLocaleString("en")} decisions)`);
console.log(`policy.check with who.limits        ${Math.round(median(planned)).toLocaleString("en").padStart(12)} ops/s   (${(1e6 / median(planned)).toFixed(2)} µs/op)`);
console.log(`ratio who.limits / none (median of per-round ratios): ${median(planRatios).toFixed(3)}×`);
