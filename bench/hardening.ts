/**
 * Issue 8 drills as timings: pure snapshot caps with many credentials, MemoryStore's worst single
 * check at 1M entries, and hostile sizes. Ratios matter (the machine is shared), not absolutes.
 *
 *   npx tsx bench/hardening.ts            # this checkout
 *   NP_SRC=/path/to/other/src npx tsx bench/hardening.ts   # another checkout, for before/after
 *   NP_ONLY=caps|hostile|memory NP_CAPS=1000,4000,25000 NP_ENTRIES=1000000   # one part, sizes
 */
import { performance } from "node:perf_hooks";

const src = process.env.NP_SRC ?? new URL("../src/", import.meta.url).pathname;
const lib = await import(`${src.replace(/\/?$/, "/")}index.ts`);
const { emptyUsage, evaluate, createPolicy, MemoryStore } = lib;

const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);
const cred = (id: string) => ({ id, kind: "api_key", newsletters: { nl_1: { sending: "write", content: "write" } }, account: false });
const roles = { nl_1: "owner" };
const testSend = { method: "POST", path: "/articles/a/test-send", newsletter: "nl_1", body: { to: ["a@x.io"] } };
const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number) => x.toFixed(3);

function capsScaling(n: number): number {
  let usage = emptyUsage();
  let now = T0;
  for (let i = 0; i < n; i++) usage = evaluate(testSend, { credential: cred(`c${i}`), roles, usage, now: (now += 1) }).usage;
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    usage = evaluate(testSend, { credential: cred(`x${i}`), roles, usage, now: (now += 1) }).usage;
    times.push(performance.now() - t);
  }
  return median(times);
}

async function memoryWorst(entries: number, checks: number): Promise<{ worst: number; median: number }> {
  const store = new MemoryStore();
  let now = T0;
  const policy = createPolicy({ store, clock: () => now });
  const me = { method: "GET", path: "/me" };
  // fill: one general window per credential (1M entries), all expiring one minute later
  for (let i = 0; i < entries; i++) await policy.check(me, { credential: cred(`f${i}`), roles: {} });
  now += 61_000; // every entry has expired
  const times: number[] = [];
  const cpu: number[] = []; // CPU time of this process (ms): a shared machine's preemption does not count, GC does
  for (let i = 0; i < checks; i++) {
    const t = performance.now();
    const c = process.cpuUsage();
    await policy.check(me, { credential: cred(`w${i}`), roles: {} });
    const used = process.cpuUsage(c);
    times.push(performance.now() - t);
    cpu.push((used.user + used.system) / 1000);
    now += 1;
  }
  const worstCpu = cpu.map((t, i) => [t, i] as const).sort((a, b) => b[0] - a[0]).slice(0, 5);
  console.log(`  most CPU per check (ms @ index): ${worstCpu.map(([t, i]) => `${t.toFixed(1)}@${i}`).join(", ")}`);
  const slowest = times.map((t, i) => [t, i] as const).sort((a, b) => b[0] - a[0]).slice(0, 5);
  console.log(`  slowest checks (ms @ index): ${slowest.map(([t, i]) => `${t.toFixed(1)}@${i}`).join(", ")}`);
  return { worst: Math.max(...times), median: median(times) };
}

function hostile(request: unknown): number {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    evaluate(request, { credential: cred("h"), roles, usage: emptyUsage(), now: T0 });
    times.push(performance.now() - t);
  }
  return median(times);
}

const only = process.env.NP_ONLY; // "caps", "hostile" or "memory": one part
const baseline = hostile({ method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" });
console.log(`baseline evaluate (plain GET): ${ms(baseline)} ms`);
if (!only || only === "caps") for (const n of (process.env.NP_CAPS ?? "1000,5000").split(",").map(Number)) console.log(`caps: one test send with ${n} credentials that test-sent today: median ${ms(capsScaling(n))} ms`);
if (!only || only === "hostile") {
const huge = "/" + "a".repeat(10_000_000);
console.log(`hostile: 10 MB path: ${ms(hostile({ method: "GET", path: huge }))} ms`);
console.log(`hostile: 10 MB idempotency key: ${ms(hostile({ method: "POST", path: "/articles/a/send", newsletter: "nl_1", idempotencyKey: "k".repeat(10_000_000) }))} ms`);
const wide: Record<string, string> = {};
for (let i = 0; i < 100_000; i++) wide[`p${i}`] = "x";
console.log(`hostile: query object with 100k keys: ${ms(hostile({ method: "GET", path: "/newsletters/nl_1/subscribers", query: wide }))} ms`);
const wideString = "/newsletters/nl_1/subscribers?" + Array.from({ length: 100_000 }, (_, i) => `p${i}=x`).join("&");
console.log(`hostile: query string with 100k params: ${ms(hostile({ method: "GET", path: wideString }))} ms`);
const longTo = Array.from({ length: 1_000_000 }, () => "a@x.io");
console.log(`hostile: body.to with 1M entries: ${ms(hostile({ ...testSend, body: { to: longTo } }))} ms`);
}
if (!only || only === "memory") {
const entries = Number(process.env.NP_ENTRIES ?? 1_000_000);
const mem = await memoryWorst(entries, 30_000);
console.log(`MemoryStore with ${entries} expired entries, 30 000 checks: worst ${ms(mem.worst)} ms, median ${ms(mem.median)} ms`);
}
