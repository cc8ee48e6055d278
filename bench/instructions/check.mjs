// The allowed decision of `npm run bench:instructions`: policy.check of an audience read, 1 000 credentials rotating (MemoryStore), ITER calls; LIB is the bundle to load
const LIB = process.env.LIB;
const { createPolicy, MemoryStore } = await import(new URL(`${LIB}/index.js`, `file://${process.cwd()}/`).href);
const ITER = Number(process.env.ITER ?? 20000);
let now = Date.UTC(2026, 10, 23, 10);
const policy = createPolicy({ store: new MemoryStore(), clock: () => now });
const creds = Array.from({ length: 1000 }, (_, i) => ({ id: `key_${i}`, kind: "api_key", newsletters: { nl_1: { audience: "read" } }, account: false }));
const roles = { nl_1: "owner" };
const req = { method: "GET", path: "/newsletters/nl_1/subscribers" };
let ok = 0;
for (let i = 0; i < ITER; i++) {
  now += 3; // 1 000 credentials × 3 ms: each credential once every 3 s, 20 a minute
  const d = await policy.check(req, { credential: creds[i % 1000], roles });
  if (d.allowed) ok++;
}
if (ok !== ITER) throw new Error(`refused ${ITER - ok}`);
