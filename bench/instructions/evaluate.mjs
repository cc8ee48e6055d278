// The allowed decision of `npm run bench:instructions`: evaluate of an audience read with N credentials in the snapshot, ITER calls (one credential, a window rolling over every 60 calls); LIB is the bundle to load
const LIB = process.env.LIB;
const { evaluate, emptyUsage } = await import(new URL(`${LIB}/index.js`, `file://${process.cwd()}/`).href);
const ITER = Number(process.env.ITER ?? 20000);
const N = Number(process.env.N ?? 1);
let now = Date.UTC(2026, 10, 23, 10);
const creds = Array.from({ length: N }, (_, i) => ({ id: `key_${i}`, kind: "api_key", newsletters: { nl_1: { audience: "read" } }, account: false }));
const roles = { nl_1: "owner" };
const req = { method: "GET", path: "/newsletters/nl_1/subscribers" };
let usage = emptyUsage();
for (let i = 0; i < N; i++) usage = evaluate(req, { credential: creds[i], roles, usage, now }).usage;
const hot = creds[0];
let ok = 0;
for (let i = 0; i < ITER; i++) {
  now += 1001; // under 60 a minute for the one credential
  const r = evaluate(req, { credential: hot, roles, usage, now });
  usage = r.usage;
  if (r.decision.allowed) ok++;
}
if (ok !== ITER) throw new Error(`refused ${ITER - ok}`);
