/**
 * `npm run bench` (first part): the performance race of issue 10, in ONE process.
 *
 * Contenders, each deciding the same allowed audience read
 * (`GET /newsletters/nl_1/subscribers?limit=100`, two budgets: general + audience) for 1 000
 * credentials in rotation (never one hot key):
 *
 * - ours: `policy.check` over MemoryStore (allowed; refused 429; refused 403), pure `evaluate` with a
 *   snapshot of 1, 1 000 and 100 000 credentials;
 * - the peer composite a host would otherwise write: rate-limiter-flexible `RateLimiterMemory` × 2
 *   (general + audience; `reward` general when audience refuses) plus CASL
 *   `ability.can('read', subject('Subscriber', { newsletter }))` with a cached ability per credential;
 * - each peer alone (rlf two budgets; CASL alone);
 * - a hand-written floor: nested `Map`, two fixed-window counters, grant ∧ role lookup;
 * - the contract's minimum: an async answer after the defensive read of the descriptor, and nothing
 *   else (what any `policy.check` pays before it decides anything).
 *
 * Method: ROUNDS (≥ 7) interleaved rounds, the order forward on even rounds and reversed on odd ones;
 * every ratio is the median of the per-round ratios (both sides measured in the same round, so a
 * busy machine slows both alike); absolute µs are printed with their spread (min–max over rounds).
 * Then the 1M-credential row (check vs rlf two budgets, both pre-filled with 1M credentials) and heap
 * per active credential at 1k, 100k and 1M before and after the windows end (needs `--expose-gc`).
 *
 * Environment: BENCH_ROUNDS (7), BENCH_N (40 000 decisions per contender per round),
 * BENCH_BIG (100 000 credentials in the big snapshot), BENCH_MILLION (1 000 000),
 * BENCH_PHASES ("race,million,memory"), BENCH_ONLY=<row id> (run one contender for BENCH_SECONDS,
 * for `node --cpu-prof`; ids: check, check429, check403, eval1, eval1k, eval100k, eval100k1k, composite, rlf, casl, floor, floor100k, contract).
 */
import { createMongoAbility, subject } from "@casl/ability";

/** What `createMongoAbility()` returns (CASL's own `MongoAbility` type is narrower than that return type). */
type Ability = ReturnType<typeof createMongoAbility>;
import { RateLimiterMemory } from "rate-limiter-flexible";
import { consumeBoth } from "./peer.js";
import { load, median } from "./stats.js";
import { createPolicy, defineConfig, emptyUsage, evaluate, MemoryStore, type Credential, type Usage } from "../src/index.js";
import { readDescriptor } from "../src/request.js";

const ROUNDS = Math.max(7, Number(process.env.BENCH_ROUNDS ?? 7));
const N = Number(process.env.BENCH_N ?? 40_000);
const CREDENTIALS = 1_000;
const BIG = Number(process.env.BENCH_BIG ?? 100_000);
const MILLION = Number(process.env.BENCH_MILLION ?? 1_000_000);
const PHASES = new Set((process.env.BENCH_PHASES ?? "race,million,memory").split(","));
const ONLY = process.env.BENCH_ONLY;
const T0 = Date.UTC(2026, 10, 22, 10);
const WINDOW_S = 60;

const docsUrl = "https://bench.invalid/errors";
const big = defineConfig({ docsUrl, budgets: { general: { limit: 1e9, window: WINDOW_S }, audience: { limit: 1e9, window: WINDOW_S } } });
const spent = defineConfig({ docsUrl, budgets: { general: { limit: 1e9, window: 3600 }, audience: { limit: 1, window: 3600 } } });
const roles = { nl_1: "owner" } as const;
const read = { method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" };
const forbidden = { method: "GET", path: "/newsletters/nl_1/articles" }; // needs content: read → 403 (general charged)
const grant = { nl_1: { audience: "read" } } as const;
const makeCredentials = (n: number, tag = "key"): Credential[] => Array.from({ length: n }, (_, i) => ({ id: `${tag}_${i}`, kind: "api_key", newsletters: grant }));
const creds = makeCredentials(CREDENTIALS);

function expectStatus(want: number, got: number, who: string): void {
  if (got !== want) throw new Error(`bench ${who}: expected ${want}, got ${got}`);
}

// ---------------------------------------------------------------- contenders

type Run = (i: number) => unknown;
interface Contender {
  id: string;
  name: string;
  /** decisions per round: N, or fewer for the slow big snapshot */
  n: number;
  run: Run;
}

/** ours: policy.check over MemoryStore of `request`, answered `status`; the injected clock moves 1 ms per decision (windows roll as in life). */
function oursChecking(id: string, name: string, request: typeof read, status: number): Contender {
  let now = T0;
  const policy = createPolicy({ store: new MemoryStore(), config: big, clock: () => ++now });
  return {
    id,
    name,
    n: N,
    run: async (i) => expectStatus(status, (await policy.check(request, { credential: creds[i % CREDENTIALS]!, roles })).status, id),
  };
}
const oursCheck = () => oursChecking("check", "ours policy.check allowed (MemoryStore)", read, 200);
const oursCheck403 = () => oursChecking("check403", "ours policy.check refused 403 (no content grant)", forbidden, 403);

async function oursCheck429(): Promise<Contender> {
  const policy = createPolicy({ store: new MemoryStore(), config: spent, clock: () => T0 });
  for (const credential of creds) await policy.check(read, { credential, roles }); // spend audience for each
  return {
    id: "check429",
    name: "ours policy.check refused 429 (audience spent)",
    n: N,
    run: async (i) => {
      expectStatus(429, (await policy.check(read, { credential: creds[i % CREDENTIALS]!, roles })).status, "check429");
    },
  };
}


/** A snapshot that has seen `count` credentials (each charged once), built with evaluate itself. */
function snapshotOf(list: readonly Credential[]): Usage {
  let usage = emptyUsage();
  for (const credential of list) usage = evaluate(read, { credential, roles, usage, now: T0, config: big }).usage;
  return usage;
}

/** `evaluate` over a snapshot that has seen `list`, the requests rotating over its first `active` credentials (default: all). */
function oursEvaluate(id: string, name: string, list: readonly Credential[], n: number, active = list.length): Contender {
  let usage = snapshotOf(list);
  let now = T0;
  return {
    id,
    name,
    n,
    run: (i) => {
      const r = evaluate(read, { credential: list[i % active]!, roles, usage, now: ++now, config: big });
      usage = r.usage;
      expectStatus(200, r.decision.status, id);
    },
  };
}

/**
 * What every `policy.check` must do, whatever else it does: answer through a Promise (DESIGN:
 * `await policy.check(…)`), and read the untrusted descriptor's seven fields defensively (own data
 * properties only, every trap inside try/catch: docs/security.md). No routing, no permission, no
 * counter, no header: the least a check can cost under its contract, measured beside the others.
 */
function contractMinimum(): Contender {
  const answer = async (request: unknown): Promise<number> => (readDescriptor(request).unreadable === undefined ? 200 : 400);
  return {
    id: "contract",
    name: "contract minimum: async answer + defensive read",
    n: N,
    run: async () => expectStatus(200, await answer(read), "contract"),
  };
}

/** rate-limiter-flexible, two budgets, all or nothing. Returns true when both budgets took the point. */
function rlfPair(points = 1e9, duration = WINDOW_S, tag = "") {
  return consumeBoth(new RateLimiterMemory({ points, duration, keyPrefix: `g${tag}` }), new RateLimiterMemory({ points, duration, keyPrefix: `a${tag}` }));
}

/** CASL, one cached ability per credential, built from the credential's grants and the caller's roles. */
function caslCheck() {
  const cache = new Map<string, Ability>();
  const abilityOf = (credential: Credential): Ability => {
    const cached = cache.get(credential.id);
    if (cached) return cached;
    {
      const readable = Object.entries(credential.newsletters ?? {})
        .filter(([nl, g]) => (g as { audience?: string }).audience !== undefined && nl in roles)
        .map(([nl]) => nl);
      const ability = createMongoAbility([{ action: "read", subject: "Subscriber", conditions: { newsletter: { $in: readable } } }]);
      cache.set(credential.id, ability);
      return ability;
    }
  };
  return (credential: Credential, newsletter: string): boolean => abilityOf(credential).can("read", subject("Subscriber", { newsletter }));
}

function composite(): Contender {
  const charge = rlfPair();
  const can = caslCheck();
  return {
    id: "composite",
    name: "peer composite: rlf Memory ×2 + CASL",
    n: N,
    run: async (i) => {
      const credential = creds[i % CREDENTIALS]!;
      if (!can(credential, "nl_1")) throw new Error("composite: 403");
      if (!(await charge(credential.id))) throw new Error("composite: 429");
    },
  };
}

function rlfAlone(): Contender {
  const charge = rlfPair();
  return {
    id: "rlf",
    name: "peer alone: rlf RateLimiterMemory ×2",
    n: N,
    run: async (i) => {
      if (!(await charge(creds[i % CREDENTIALS]!.id))) throw new Error("rlf: 429");
    },
  };
}

function caslAlone(): Contender {
  const can = caslCheck();
  return {
    id: "casl",
    name: "peer alone: CASL ability.can (cached)",
    n: N,
    run: (i) => {
      if (!can(creds[i % CREDENTIALS]!, "nl_1")) throw new Error("casl: 403");
    },
  };
}

/** The floor: what a careful host writes by hand. Nested Map, two fixed-window counters, grant ∧ role. */
export class Floor {
  readonly counters = new Map<string, Map<string, { start: number; count: number }>>();
  private charges = 0;
  constructor(
    private readonly limits: { general: number; audience: number },
    private readonly windowMs: number,
    private readonly sweepEvery = 10_000,
  ) {}
  decide(credential: Credential, rolesOf: Record<string, string>, newsletter: string, now: number): 200 | 403 | 429 {
    const g = credential.newsletters?.[newsletter] as { audience?: string } | undefined;
    if (!(g?.audience === "read" || g?.audience === "write") || rolesOf[newsletter] === undefined) return 403;
    if (++this.charges >= this.sweepEvery) this.sweep(now);
    let budgets = this.counters.get(credential.id);
    if (!budgets) this.counters.set(credential.id, (budgets = new Map()));
    const start = now - (now % this.windowMs);
    let general = budgets.get("general");
    let audience = budgets.get("audience");
    if (!general || general.start !== start) budgets.set("general", (general = { start, count: 0 }));
    if (!audience || audience.start !== start) budgets.set("audience", (audience = { start, count: 0 }));
    if (general.count >= this.limits.general || audience.count >= this.limits.audience) return 429;
    general.count++;
    audience.count++;
    return 200;
  }
  sweep(now: number): void {
    this.charges = 0;
    for (const [id, budgets] of this.counters) {
      for (const [name, c] of budgets) if (now >= c.start + this.windowMs) budgets.delete(name);
      if (budgets.size === 0) this.counters.delete(id);
    }
  }
}

function floor(list: readonly Credential[] = creds, id = "floor", name = "floor: nested Map, 2 counters, grant ∧ role"): Contender {
  const f = new Floor({ general: 1e9, audience: 1e9 }, WINDOW_S * 1000);
  let now = T0;
  for (const credential of list) f.decide(credential, roles, "nl_1", now);
  return {
    id,
    name,
    n: N,
    run: (i) => expectStatus(200, f.decide(list[i % list.length]!, roles, "nl_1", ++now), id),
  };
}

// ---------------------------------------------------------------- measuring

async function timeRun(c: Contender, n = c.n, offset = 0): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = offset; i < offset + n; i++) {
    const r = c.run(i);
    if (r instanceof Promise) await r;
  }
  return Number(process.hrtime.bigint() - start) / 1e3 / n; // µs per decision
}

const spread = (xs: readonly number[]): string => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
const fmt = (x: number, digits = 2) => x.toFixed(digits);

/** Interleaved rounds over `contenders`; returns µs per decision per round for each id. */
async function rounds(contenders: Contender[], roundCount: number): Promise<Map<string, number[]>> {
  const samples = new Map<string, number[]>(contenders.map((c) => [c.id, []]));
  const offsets = new Map<string, number>(contenders.map((c) => [c.id, 0]));
  for (const c of contenders) await timeRun(c, Math.min(c.n, 5_000), 0); // warm up
  for (let r = 0; r < roundCount; r++) {
    const order = r % 2 === 0 ? contenders : [...contenders].reverse();
    for (const c of order) {
      const off = offsets.get(c.id)!;
      samples.get(c.id)!.push(await timeRun(c, c.n, off));
      offsets.set(c.id, off + c.n);
    }
  }
  return samples;
}

/** Median over rounds of a ÷ b (per-round ratio of µs per decision). */
const ratio = (s: Map<string, number[]>, a: string, b: string): number => median(s.get(a)!.map((x, r) => x / s.get(b)![r]!));

// ---------------------------------------------------------------- phase 1: the race at 1 000 credentials

async function race(): Promise<void> {
  const t = performance.now();
  const bigList = makeCredentials(BIG, "big");
  const e100k = oursEvaluate("eval100k", `ours evaluate, ${BIG.toLocaleString("en")} credentials in snapshot`, bigList, Math.max(200, Math.floor(N / 20)));
  const buildSeconds = (performance.now() - t) / 1e3;
  // context for the 100 000 row: the same snapshot size with 1 000 credentials active (its size
  // alone), and the floor rotating over as many credentials (what touching 100 000 costs anyone)
  const e100kActive = oursEvaluate("eval100k1k", `ours evaluate, ${BIG.toLocaleString("en")} in snapshot, 1 000 active`, bigList, N, CREDENTIALS);
  const floorBig = floor(bigList, "floor100k", `floor, ${BIG.toLocaleString("en")} credentials rotating`);
  const contenders = [
    oursCheck(),
    await oursCheck429(),
    oursCheck403(),
    oursEvaluate("eval1", "ours evaluate, 1 credential in snapshot", creds.slice(0, 1), N),
    oursEvaluate("eval1k", "ours evaluate, 1 000 credentials in snapshot", creds, N),
    e100k,
    e100kActive,
    composite(),
    rlfAlone(),
    caslAlone(),
    floor(),
    floorBig,
    contractMinimum(),
  ];
  console.log(`\n== race: ${ROUNDS} interleaved rounds (forward, reversed, …), ${N.toLocaleString("en")} decisions per contender per round, ${CREDENTIALS.toLocaleString("en")} credentials rotating`);
  console.log(`(building the ${BIG.toLocaleString("en")}-credential snapshot with evaluate took ${fmt(buildSeconds, 1)} s: ${fmt((buildSeconds * 1e6) / BIG, 1)} µs per credential added on average)`);
  const s = await rounds(contenders, ROUNDS);
  console.log(`\n${"contender".padEnd(52)} ${"µs/decision".padStart(12)}  spread over rounds (min–max)`);
  for (const c of contenders) console.log(`${c.name.padEnd(52)} ${fmt(median(s.get(c.id)!)).padStart(12)}  ${spread(s.get(c.id)!)}`);

  const r = (a: string, b: string) => ratio(s, a, b);
  const vsPeer = r("check", "composite");
  console.log(`\n${"issue 10 row".padEnd(70)} ${"today".padStart(22)}  goal`);
  const row = (label: string, today: string, goal: string) => console.log(`${label.padEnd(70)} ${today.padStart(22)}  ${goal}`);
  row("policy.check allowed, 1 000 credentials ÷ peer composite", vsPeer >= 1 ? `${fmt(vsPeer)}× slower` : `${fmt(1 / vsPeer)}× faster`, "≥ 3× faster");
  row("policy.check ÷ floor", `${fmt(r("check", "floor"), 1)}×`, "≤ 10×");
  row("refused 429 ÷ allowed, 403 ÷ allowed", `${fmt(r("check429", "check"))}×, ${fmt(r("check403", "check"))}×`, "≤ 1.1×");
  row("pure evaluate (1 credential) ÷ policy.check", `${fmt(r("eval1", "check"))}×`, "≤ 2×");
  row("evaluate, 1 000 credentials in the snapshot ÷ 1", `${fmt(r("eval1k", "eval1"))}×`, "≤ 1.2×");
  row(`evaluate, ${BIG.toLocaleString("en")} credentials in the snapshot ÷ 1`, `${fmt(r("eval100k", "eval1"))}× (${fmt(median(s.get("eval100k")!))} µs)`, "≤ 1.5×");
  console.log(
    `  context: the same snapshot with 1 000 of its credentials active ÷ 1 credential ${fmt(r("eval100k1k", "eval1"))}× (its size alone); ` +
      `the floor rotating over ${BIG.toLocaleString("en")} credentials ÷ over 1 000 ${fmt(r("floor100k", "floor"))}× (what touching that many costs anyone)`,
  );
  // how much of the "3× faster" target the contract alone takes (see contractMinimum)
  const target = median(s.get("composite")!) / 3;
  const floorTarget = median(s.get("floor")!) * 10;
  const least = median(s.get("contract")!);
  console.log(
    `\nthe contract's minimum (async answer + defensive read) ${fmt(least)} µs, ${fmt(r("contract", "composite"))}× the composite: ` +
      `3× faster than the composite is ${fmt(target)} µs per check, 10× the floor ${fmt(floorTarget)} µs; ` +
      `that leaves ${fmt(target - least)} µs and ${fmt(floorTarget - least)} µs for routing, permission, two counters, headers and the decision`,
  );
  console.log("\nalso: peer composite ÷ rlf alone " + fmt(r("composite", "rlf")) + "×, CASL alone ÷ composite " + fmt(r("casl", "composite")) + "×, check ÷ rlf alone " + fmt(r("check", "rlf")) + "×");
  console.log(`load average at the end of the race: ${await load()}`);
}

// ---------------------------------------------------------------- phase 2: 1M credentials

async function million(): Promise<void> {
  const list = makeCredentials(MILLION, "m");
  let now = T0;
  const policy = createPolicy({ store: new MemoryStore(), config: big, clock: () => now });
  const charge = rlfPair(1e9, 3600, "m");
  const t = performance.now();
  for (const credential of list) await policy.check(read, { credential, roles }); // pre-fill: every credential active
  const fillOurs = (performance.now() - t) / 1e3;
  const t2 = performance.now();
  for (const credential of list) await charge(credential.id);
  const fillRlf = (performance.now() - t2) / 1e3;
  const n = Math.min(N, MILLION);
  // rotate through all 1M credentials with a large stride, so that each decision hits a cold key
  const pick = (i: number) => list[(i * 7919) % MILLION]!;
  const contenders: Contender[] = [
    {
      id: "check1m",
      name: `ours policy.check, ${MILLION.toLocaleString("en")} credentials active`,
      n,
      run: async (i) => {
        now = T0 + Math.floor(i / 100); // 1 ms per 100 decisions: the windows stay open for the whole phase
        expectStatus(200, (await policy.check(read, { credential: pick(i), roles })).status, "check1m");
      },
    },
    {
      id: "rlf1m",
      name: `rlf RateLimiterMemory ×2, ${MILLION.toLocaleString("en")} keys active`,
      n,
      run: async (i) => {
        if (!(await charge(pick(i).id))) throw new Error("rlf1m: 429");
      },
    },
  ];
  console.log(`\n== ${MILLION.toLocaleString("en")} credentials: pre-fill ours ${fmt(fillOurs, 1)} s, rlf ${fmt(fillRlf, 1)} s; ${ROUNDS} interleaved rounds of ${n.toLocaleString("en")}`);
  const s = await rounds(contenders, ROUNDS);
  for (const c of contenders) console.log(`${c.name.padEnd(52)} ${fmt(median(s.get(c.id)!)).padStart(12)}  ${spread(s.get(c.id)!)}`);
  const q = ratio(s, "check1m", "rlf1m");
  console.log(`${"policy.check at 1M credentials ÷ rlf two budgets alone at 1M".padEnd(70)} ${(q >= 1 ? `${fmt(q)}× slower` : `${fmt(1 / q)}× faster`).padStart(22)}  faster (≤ 1×)`);
  console.log(`load average: ${await load()}`);
}

// ---------------------------------------------------------------- phase 3: heap per active credential

const gc = (globalThis as { gc?: () => void }).gc;
/**
 * The JS heap and the memory of ArrayBuffers (outside it): MemoryStore keeps its windows in typed
 * arrays, whose bytes `heapUsed` leaves out (the row read ~95 B per credential where the windows'
 * pages held 60 B more; found in the sixteenth round).
 */
function heap(): number {
  gc!();
  gc!();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Heap {
  active: number;
  expired: number;
  note?: string;
}

async function heapOurs(list: readonly Credential[]): Promise<Heap> {
  let now = T0;
  const before = heap();
  const store = new MemoryStore();
  const policy = createPolicy({ store, config: big, clock: () => now });
  for (const credential of list) await policy.check(read, { credential, roles });
  const active = (heap() - before) / list.length;
  now = T0 + 2 * WINDOW_S * 1000 + 1000; // past the window (and the one after it)
  for (let i = 0; i < 10_000; i++) await policy.check(read, { credential: list[0]!, roles }); // sweepEvery default: expiry runs
  const expired = (heap() - before) / list.length;
  void policy;
  return { active, expired };
}

async function heapRlf(list: readonly Credential[]): Promise<Heap> {
  // rlf expires with real timers (one setTimeout per key): a short window, then wait it out
  const duration = list.length >= 1_000_000 ? 30 : 8;
  const before = heap();
  const charge = rlfPair(1e9, duration, `h${list.length}`);
  const t = performance.now();
  for (const credential of list) await charge(credential.id);
  const filled = performance.now() - t;
  const active = (heap() - before) / list.length;
  await sleep(duration * 1000 + 1500); // from the end of the fill: the last key's timer has fired
  await charge(list[0]!.id);
  const expired = (heap() - before) / list.length;
  void charge;
  return { active, expired, note: filled > duration * 1000 ? `fill took ${fmt(filled / 1e3, 1)} s > window ${duration} s: active figure understated` : undefined };
}

async function heapFloor(list: readonly Credential[]): Promise<Heap> {
  const before = heap();
  const f = new Floor({ general: 1e9, audience: 1e9 }, WINDOW_S * 1000);
  for (const credential of list) f.decide(credential, roles, "nl_1", T0);
  const active = (heap() - before) / list.length;
  for (let i = 0; i < 10_000; i++) f.decide(list[0]!, roles, "nl_1", T0 + 2 * WINDOW_S * 1000 + 1000);
  const expired = (heap() - before) / list.length;
  void f;
  return { active, expired };
}

async function memory(): Promise<void> {
  if (!gc) {
    console.log("\n== heap per active credential: skipped (run node with --expose-gc)");
    return;
  }
  console.log(`\n== memory per active credential (two budgets charged once each), bytes of the JS heap and of ArrayBuffers; 'after' = clock past the window + enough calls for expiry to run`);
  console.log(`${"credentials".padStart(12)}  ${"MemoryStore".padStart(22)}  ${"rlf Memory ×2".padStart(22)}  ${"floor".padStart(22)}`);
  console.log(`${"".padStart(12)}  ${"active / after".padStart(22)}  ${"active / after".padStart(22)}  ${"active / after".padStart(22)}`);
  const sizes = [1_000, 100_000, MILLION];
  for (const size of sizes) {
    const list = makeCredentials(size, `h${size}`); // allocated before each baseline: not counted
    const cells: string[] = [];
    const notes: string[] = [];
    for (const measure of [heapOurs, heapRlf, heapFloor]) {
      const h = await measure(list);
      cells.push(`${fmt(h.active, 0)} / ${fmt(h.expired, 0)}`.padStart(22));
      if (h.note) notes.push(h.note);
    }
    console.log(`${size.toLocaleString("en").padStart(12)}  ${cells.join("  ")}${notes.length ? `   (${notes.join("; ")})` : ""}`);
  }
  console.log(`load average: ${await load()}`);
}

// ---------------------------------------------------------------- main

async function only(id: string): Promise<void> {
  const makers: Record<string, () => Contender | Promise<Contender>> = {
    check: oursCheck,
    check429: oursCheck429,
    check403: oursCheck403,
    eval1: () => oursEvaluate("eval1", "evaluate, 1 credential", creds.slice(0, 1), N),
    eval1k: () => oursEvaluate("eval1k", "evaluate, 1 000 credentials", creds, N),
    eval100k: () => oursEvaluate("eval100k", "evaluate, big snapshot", makeCredentials(BIG, "big"), 200),
    eval100k1k: () => oursEvaluate("eval100k1k", "evaluate, big snapshot, 1 000 active", makeCredentials(BIG, "big"), N, CREDENTIALS),
    floor100k: () => floor(makeCredentials(BIG, "big"), "floor100k", "floor, big"),
    composite,
    rlf: rlfAlone,
    casl: caslAlone,
    floor: () => floor(),
    contract: contractMinimum,
  };
  const make = makers[id];
  if (!make) throw new Error(`BENCH_ONLY: unknown id ${id}; one of ${Object.keys(makers).join(", ")}`);
  const c = await make();
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const t = performance.now();
  let i = 0;
  const us: number[] = [];
  while (performance.now() - t < seconds * 1000) {
    us.push(await timeRun(c, c.n, i));
    i += c.n;
  }
  console.log(`${c.name}: ${i.toLocaleString("en")} decisions, median ${fmt(median(us))} µs/decision`);
}

console.log(`node ${process.version}, ${(await import("node:os")).cpus().length} CPUs; load average at start: ${await load()}`);
if (ONLY) {
  await only(ONLY);
} else {
  if (PHASES.has("race")) await race();
  if (PHASES.has("million")) await million();
  if (PHASES.has("memory")) await memory();
  console.log("\nshared, loaded machine: compare the ratios, not the absolute µs.");
}
