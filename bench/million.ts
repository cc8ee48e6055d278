/**
 * `npm run bench:million`: `policy.check` alone at 1 000 000 active credentials, for what the race's
 * 1M row does not show: where the time goes (`BENCH_PROFILE=<file>` writes a CPU profile of the
 * timed loop only, not of the fill) and what the garbage collector promotes. Run it under
 * `node --trace-gc-nvp` and sum the `promoted=` of the scavenges after the "timed loop" line:
 *
 *   npm run bench:million          # builds .bench/million.js (the build is that script's, in package.json) and runs it once
 *   node --trace-gc-nvp .bench/million.js | awk '/timed loop/{on=1} on && /gc=s /{for(i=1;i<=NF;i++) if($i ~ /^promoted=/){split($i,a,"=");p+=a[2]}} END{print p, "bytes promoted"}'
 *
 * Environment: BENCH_MILLION (1 000 000 credentials), BENCH_N (1 500 000 checks), BENCH_PROFILE.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { createPolicy, defineConfig, MemoryStore, type Credential } from "../src/index.js";

const M = Number(process.env.BENCH_MILLION ?? 1_000_000);
const N = Number(process.env.BENCH_N ?? 1_500_000);
const T0 = Date.UTC(2026, 10, 22, 10);
const config = defineConfig({ docsUrl: "https://bench.invalid/errors", budgets: { general: { limit: 1e9, window: 3600 }, audience: { limit: 1e9, window: 3600 } } });
const roles = { nl_1: "owner" } as const;
const read = { method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" };
const grant = { nl_1: { audience: "read" } } as const;
const list: Credential[] = Array.from({ length: M }, (_, i) => ({ id: `m_${i}`, kind: "api_key", newsletters: grant }));

let now = T0;
const policy = createPolicy({ store: new MemoryStore(), config, clock: () => now });
for (const credential of list) await policy.check(read, { credential, roles }); // every credential active
// with a large stride each check finds a credential the processor's caches have not seen for a while
const pick = (i: number) => list[(i * 7919) % M]!;

const profile = process.env.BENCH_PROFILE;
const session = profile === undefined ? undefined : new Session();
if (session !== undefined) {
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
}
console.log(`timed loop: ${N.toLocaleString("en")} checks over ${M.toLocaleString("en")} active credentials`);
const start = performance.now();
for (let i = 0; i < N; i++) {
  now = T0 + Math.floor(i / 100);
  const decision = await policy.check(read, { credential: pick(i), roles });
  if (decision.status !== 200) throw new Error(`bench million: expected 200, got ${decision.status}`);
}
console.log(`${(((performance.now() - start) * 1000) / N).toFixed(2)} µs per check`);
if (session !== undefined) {
  const { profile: taken } = await session.post("Profiler.stop");
  writeFileSync(profile!, JSON.stringify(taken));
  console.log(`profile: ${profile} (node bench/profile-top.mjs ${profile} 10)`);
}
