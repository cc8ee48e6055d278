/**
 * The pure snapshot's split buckets (snapshot.ts, since 6f2ef03): below the two levels of 16
 * buckets, a bucket of more than LEAF_MAX records becomes an array of 16 sub-buckets by the next 4
 * bits of the key's hash; snapshots written before (one plain leaf per (outer, inner), however
 * large) are read and written by the same code. The rest of the suite never holds more than ~2 000
 * records of a kind, so nothing else splits a bucket: a record lost or duplicated by a split, a
 * wrong sub-bucket on read, or a prune/reset that misses a split bucket would go unseen there — and
 * a lost budget window is over-admission.
 *
 * One scenario (≈6 000 API keys, 3 audience reads each against a limit of 2, a test send each with
 * an Idempotency-Key, some retries and conflicts) is run once through `evaluate` and once through
 * `policy.check` over a MemoryStore; the tests below reuse that run.
 */
import { CAP_KEEP_MS } from "../src/store.js";
import fc from "fast-check";
import { freeze } from "immer";
import { describe, expect, it } from "vitest";
import { MemoryStore, createPolicy, defineConfig, emptyUsage, evaluate, prune, reset, type Credential, type Decision, type PolicyRequest, type Usage } from "../src/index.js";
import { fnv1a } from "../src/hash.js";
import { LEAF_MAX, changeIn, keepAll, recordIn, recordsIn, slotOf, usageData, type BucketNode, type Buckets } from "../src/snapshot.js";
import { budgetKey, capKey, idempotencyScope, subjectOf } from "../src/store-keys.js";
import { comparableDecision } from "../src/testing/index.js";
import { SWEEP_ONCE_SPLIT, T0 } from "./fixtures.js";

const N = 6000;
const WINDOW_MS = 60_000;
const config = defineConfig({ docsUrl: "https://x.invalid/e", budgets: { audience: { limit: 2, window: 60 } } });
const roles = freeze({ nl_1: "owner" as const }, true);
const credentials: Credential[] = Array.from({ length: N }, (_, i) =>
  freeze({ id: `key_${i}`, kind: "api_key" as const, account: false, newsletters: { nl_1: { audience: "read", content: "write", sending: "write" } } }, true),
);

interface Step {
  readonly who: number;
  readonly request: PolicyRequest;
  readonly now: number;
}

const read = (): PolicyRequest => ({ method: "GET", path: "/newsletters/nl_1/subscribers" });
const testSend = (i: number, to = `u${i}@example.com`): PolicyRequest => ({
  method: "POST",
  path: "/articles/a_1/test-send",
  newsletter: "nl_1",
  body: { to: [to] },
  idempotencyKey: `idem-${i}`,
});

/** Reads round-robin, a test send each, retries (replays) and conflicting reuses of a key, reads again: all inside one 60 s window. */
function schedule(): { steps: Step[]; half: number } {
  const steps: Step[] = [];
  let t = T0;
  const add = (who: number, request: PolicyRequest) => steps.push({ who, request: { ...request, requestId: `r${steps.length}` }, now: (t += 1) });
  for (let i = 0; i < N; i++) add(i, read());
  for (let i = 0; i < N; i++) add(i, testSend(i));
  for (let i = 0; i < N; i++) add(i, read());
  const half = steps.length;
  for (let i = 0; i < N; i += 7) add(i, testSend(i)); // replay
  for (let i = 3; i < N; i += 11) add(i, testSend(i, "other@example.com")); // 409 conflict
  for (let i = 0; i < N; i++) add(i, read());
  expect(t - T0).toBeLessThan(WINDOW_MS / 2); // every step in the first window: the third read must be refused
  return { steps, half };
}

function step(usage: Usage, s: Step): { decision: Decision; usage: Usage } {
  return evaluate(s.request, { credential: credentials[s.who]!, roles, usage, now: s.now, config });
}

interface Run {
  steps: Step[];
  half: number;
  pure: Decision[];
  /** The snapshot before step `half`, and the final one. */
  atHalf: Usage;
  final: Usage;
  stateful: Decision[];
}

let cached: Promise<Run> | undefined;
/** The scenario, run once for the whole file. */
function run(): Promise<Run> {
  cached ??= (async () => {
    const { steps, half } = schedule();
    let usage = emptyUsage();
    let atHalf = usage;
    const pure: Decision[] = [];
    steps.forEach((s, i) => {
      if (i === half) atHalf = usage;
      const next = step(usage, s);
      pure.push(next.decision);
      usage = next.usage;
    });
    let now = T0;
    const policy = createPolicy({ store: new MemoryStore(), config, clock: () => now });
    const stateful: Decision[] = [];
    for (const s of steps) {
      now = s.now;
      stateful.push(await policy.check(s.request, { credential: credentials[s.who]!, roles }));
    }
    return { steps, half, pure, atHalf, final: usage, stateful };
  })();
  return cached;
}

// ---------- layout helpers ----------

type Records = Readonly<Record<string, unknown>>;

/** A leaf written as pairs (key, record, …, and its bound last: an odd length), as this version writes leaves; a split node is 16 nodes. */
function isPairs(node: unknown): node is readonly unknown[] {
  return Array.isArray(node) && node.length > 0 && typeof node[0] === "string";
}

/** Every (outer, inner) top node of a kind. */
function topNodes<T>(buckets: Buckets<T>): BucketNode<T>[] {
  return Object.values(buckets).flatMap((inner) => Object.values(inner));
}

/** How many array (split) nodes there are anywhere below the two levels, and the deepest split level. */
function splitStats(buckets: Buckets<unknown>): { arrays: number; depth: number; maxLeaf: number } {
  let arrays = 0;
  let depth = 0;
  let maxLeaf = 0;
  const walk = (node: BucketNode<unknown>, d: number): void => {
    if (isPairs(node)) maxLeaf = Math.max(maxLeaf, Math.floor(node.length / 2));
    else if (Array.isArray(node)) {
      arrays++;
      depth = Math.max(depth, d + 1);
      expect(node).toHaveLength(16);
      for (const child of node as readonly BucketNode<unknown>[]) walk(child, d + 1);
    } else maxLeaf = Math.max(maxLeaf, Object.keys(node).length);
  };
  for (const node of topNodes(buckets)) walk(node, 0);
  return { arrays, depth, maxLeaf };
}

/** Checks every record sits where `recordIn` looks for it (by its hash), once. */
function expectWellPlaced(buckets: Buckets<unknown>): void {
  const entries = recordsIn(buckets);
  expect(new Set(entries.map(([k]) => k)).size, "no key stored twice").toBe(entries.length);
  expect(entries.filter(([k, record]) => recordIn(buckets, k) !== record).map(([k]) => k), "records recordIn does not find where they are").toEqual([]);
}

/** The old layout: every split tree below (outer, inner) flattened back into one plain-record leaf (an object, as leaves were). */
function flattenNode(node: BucketNode<unknown>): Records {
  if (!Array.isArray(node)) return node as Records;
  if (isPairs(node)) {
    const leaf: Record<string, unknown> = {};
    for (let i = 0; i + 1 < node.length; i += 2) leaf[node[i] as string] = node[i + 1];
    return leaf;
  }
  return Object.assign({}, ...(node as readonly BucketNode<unknown>[]).map(flattenNode)) as Records;
}
function flattenBuckets<T>(buckets: Buckets<T>): Buckets<T> {
  const out: Record<string, Record<string, Records>> = {};
  for (const [outer, inner] of Object.entries(buckets)) {
    for (const [i, node] of Object.entries(inner)) {
      const leaf = flattenNode(node);
      if (Object.keys(leaf).length > 0) (out[outer] ??= {})[i] = leaf;
    }
  }
  return freeze(out, true) as unknown as Buckets<T>;
}
function toOldLayout(usage: Usage): Usage {
  const data = usageData(usage);
  return freeze({ ...data, windows: flattenBuckets(data.windows), keys: flattenBuckets(data.keys), caps: flattenBuckets(data.caps) }, true) as unknown as Usage;
}

const count = (usage: Usage, kind: "windows" | "keys" | "caps") => recordsIn(usageData(usage)[kind] as Buckets<unknown>).length;
const comparable = (d: Decision) => ({ status: d.status, allowed: d.allowed, headers: d.headers, code: d.body?.error.code });

// ---------- the tests ----------

describe("split buckets (snapshot layout of 6f2ef03)", () => {
  it("differential at scale: evaluate ≡ policy.check over MemoryStore with ~6 000 credentials, exactly 2 of 3 reads allowed each, and the snapshot really split", async () => {
    const { steps, pure, stateful, final } = await run();
    expect(stateful).toHaveLength(pure.length);
    const allowedReads = new Array<number>(N).fill(0);
    const mismatches: string[] = [];
    steps.forEach((s, i) => {
      const p = pure[i]!;
      const c = stateful[i]!;
      if (mismatches.length < 5 && JSON.stringify(comparable(p)) !== JSON.stringify(comparable(c))) mismatches.push(`step ${i} (key_${s.who} ${s.request.method} ${s.request.path}): pure ${JSON.stringify(comparable(p))} check ${JSON.stringify(comparable(c))}`);
      if (s.request.method === "GET" && p.allowed) allowedReads[s.who]!++;
    });
    expect(mismatches).toEqual([]);
    // the full decisions too (request ids are given, so they agree; cap member names may differ)
    for (let i = 0; i < pure.length; i += 97) expect(comparableDecision(stateful[i]!), `step ${i}`).toEqual(comparableDecision(pure[i]!));
    // a lost window would let a third read through
    expect(allowedReads.filter((n) => n !== 2)).toEqual([]);
    const third = steps.map((s, i) => [s, pure[i]!] as const).filter(([s], i) => i >= steps.length - N && s.request.method === "GET");
    expect(third).toHaveLength(N);
    for (const [, d] of third) expect(d.status).toBe(429);
    // every test send allowed once; retries replayed (200), reused keys with another body 409
    const sends = steps.map((s, i) => [s, pure[i]!] as const).filter(([s]) => s.request.method === "POST");
    expect(sends.slice(0, N).every(([, d]) => d.status === 200)).toBe(true);
    const conflicts = sends.slice(N).filter(([s]) => (s.request.body as { to: string[] }).to[0] === "other@example.com");
    expect(conflicts.length).toBeGreaterThan(500);
    for (const [, d] of conflicts) expect(d.status).toBe(409);
    for (const [, d] of sends.slice(N).filter(([s]) => (s.request.body as { to: string[] }).to[0] !== "other@example.com")) expect(d.status).toBe(200);

    // the snapshot holds what was charged, each record once, where a read finds it
    const data = usageData(final);
    expect(count(final, "windows")).toBe(3 * N); // general + audience + write of each credential
    expect(count(final, "keys")).toBe(N);
    expect(count(final, "caps")).toBe(N); // test-send cap per credential
    for (const kind of ["windows", "keys", "caps"] as const) expectWellPlaced(data[kind] as Buckets<unknown>);
    // and it did split: arrays below the two levels, no leaf past LEAF_MAX in a split tree
    const windows = splitStats(data.windows);
    expect(windows.arrays).toBeGreaterThan(200);
    expect(splitStats(data.keys).arrays).toBeGreaterThan(50);
    expect(splitStats(data.caps).arrays).toBeGreaterThan(50);
    for (const kind of ["windows", "keys", "caps"] as const) expect(splitStats(data[kind] as Buckets<unknown>).maxLeaf).toBeLessThanOrEqual(LEAF_MAX);
  });

  it("JSON round trip halfway: a snapshot stored as JSON and restored continues with identical decisions (and the restored one is accepted unfrozen or deep-frozen)", async () => {
    const { steps, half, pure, atHalf, final } = await run();
    expect(splitStats(usageData(atHalf).windows).arrays).toBeGreaterThan(0);
    for (const restore of [(u: Usage) => JSON.parse(JSON.stringify(u)) as Usage, (u: Usage) => freeze(JSON.parse(JSON.stringify(u)), true) as Usage]) {
      let usage = restore(atHalf);
      expect(usage).toEqual(atHalf);
      for (let i = half; i < steps.length; i++) {
        const next = step(usage, steps[i]!);
        if (JSON.stringify(next.decision) !== JSON.stringify(pure[i])) expect(next.decision, `step ${i}`).toEqual(pure[i]);
        usage = next.usage;
      }
      // the same records as the run without the round trip
      expect(Object.fromEntries(recordsIn(usageData(usage).windows))).toEqual(Object.fromEntries(recordsIn(usageData(final).windows)));
      expect(Object.fromEntries(recordsIn(usageData(usage).keys))).toEqual(Object.fromEntries(recordsIn(usageData(final).keys)));
      expect(Object.fromEntries(recordsIn(usageData(usage).caps))).toEqual(Object.fromEntries(recordsIn(usageData(final).caps)));
    }
  });

  it("old layout read: a snapshot with every split tree flattened into one big leaf per bucket gives the same decisions, and writing into it works (it splits, and keeps agreeing)", async () => {
    const { final } = await run();
    const flat = toOldLayout(final);
    for (const kind of ["windows", "keys", "caps"] as const) {
      expect(splitStats(usageData(flat)[kind] as Buckets<unknown>).arrays).toBe(0);
      expect(count(flat, kind)).toBe(count(final, kind));
      expectWellPlaced(usageData(flat)[kind] as Buckets<unknown>);
    }
    expect(splitStats(usageData(flat).windows).maxLeaf).toBeGreaterThan(LEAF_MAX * 2);

    // next round, still inside the window: a 4th read (refused: the windows are found), a replay,
    // a conflicting reuse, a new test send (the cap counts it as the second), over both layouts
    let t = T0 + WINDOW_MS / 2;
    const next: Step[] = [];
    for (let i = 0; i < N; i += 3) next.push({ who: i, request: { ...read(), requestId: `n${next.length}` }, now: ++t });
    for (let i = 1; i < N; i += 5) next.push({ who: i, request: { ...testSend(i), requestId: `n${next.length}` }, now: ++t });
    for (let i = 2; i < N; i += 5) next.push({ who: i, request: { ...testSend(i, "x@example.com"), requestId: `n${next.length}` }, now: ++t });
    for (let i = 4; i < N; i += 5) next.push({ who: i, request: { ...testSend(i), idempotencyKey: `second-${i}`, requestId: `n${next.length}` }, now: ++t });
    let [a, b] = [final, flat];
    const statuses = new Map<number, number>();
    for (const [i, s] of next.entries()) {
      const x = step(a, s);
      const y = step(b, s);
      if (JSON.stringify(x.decision) !== JSON.stringify(y.decision)) expect(y.decision, `next step ${i}`).toEqual(x.decision);
      statuses.set(x.decision.status, (statuses.get(x.decision.status) ?? 0) + 1);
      [a, b] = [x.usage, y.usage];
    }
    expect(Object.fromEntries(statuses)).toEqual({ 429: 2000, 200: 1200 + 1200, 409: 1200 });
    // the flattened snapshot was written into: its written buckets split, every record still found once
    for (const kind of ["windows", "keys", "caps"] as const) {
      expectWellPlaced(usageData(b)[kind] as Buckets<unknown>);
      expect(Object.fromEntries(recordsIn(usageData(b)[kind] as Buckets<unknown>))).toEqual(Object.fromEntries(recordsIn(usageData(a)[kind] as Buckets<unknown>)));
    }
    expect(splitStats(usageData(b).windows).arrays).toBeGreaterThan(0);
    expect(count(b, "keys")).toBe(N + 1200);
    // and it keeps agreeing after that: one more read by everyone (refused: still inside the window)
    for (let i = 0; i < N; i += 13) {
      const s: Step = { who: i, request: { ...read(), requestId: `m${i}` }, now: ++t };
      const x = step(a, s);
      const y = step(b, s);
      expect(y.decision).toEqual(x.decision);
      expect(x.decision.status).toBe(429);
      [a, b] = [x.usage, y.usage];
    }
  });

  it("expiry in split buckets: once the window has passed, evaluate's sweep and prune(usage, now) forget every expired window (and prune forgets expired keys and caps)", async () => {
    const { final } = await run();
    const later = T0 + 2 * WINDOW_MS;
    // prune: every window is expired; idempotency records (24 h) and today's caps stay
    const pruned = prune(final, later);
    expect(count(pruned, "windows")).toBe(0);
    expect(count(pruned, "keys")).toBe(N);
    expect(count(pruned, "caps")).toBe(N);
    expectWellPlaced(usageData(pruned).keys);
    // a week after the next day (past the caps' reset and their week's keep, and the records' 24 h), everything goes
    const gone = prune(final, T0 + 25 * 3600_000 + CAP_KEEP_MS);
    for (const kind of ["windows", "keys", "caps"] as const) expect(count(gone, kind)).toBe(0);
    // the original snapshot is untouched
    expect(count(final, "windows")).toBe(3 * N);

    // evaluate's sweep: reads after the window reach every leaf (these buckets split once) and leave
    // only the readers' own windows
    let usage = final;
    const readers = SWEEP_ONCE_SPLIT;
    const reader = (i: number) => (i * 7) % N;
    for (let i = 0; i < readers; i++) {
      const r = step(usage, { who: reader(i), request: read(), now: later + i });
      expect(r.decision.status, `key_${reader(i)}`).toBe(200);
      usage = r.usage;
    }
    expect(splitStats(usageData(final).windows).depth, "the buckets split once").toBe(1);
    const left = recordsIn(usageData(usage).windows);
    expect(left).toHaveLength(2 * readers); // general + audience of each reader
    expect(new Set(left.map(([k]) => k))).toEqual(new Set(Array.from({ length: readers }, (_, i) => ["general", "audience"].map((b) => budgetKey(subjectOf(credentials[reader(i)]!), b))).flat()));
    expectWellPlaced(usageData(usage).windows);
  });

  it("reset in split buckets clears exactly one credential's windows, idempotency records and test-send count; every other credential keeps its counts", async () => {
    const { final } = await run();
    const now = T0 + WINDOW_MS / 2;
    // credentials whose audience window sits in a split bucket
    const inSplit = (i: number) => Array.isArray(topNodeOf(usageData(final).windows, budgetKey(subjectOf(credentials[i]!), "audience")));
    const targets = Array.from({ length: N }, (_, i) => i).filter(inSplit).filter((_, j) => j % 400 === 0);
    expect(targets.length).toBeGreaterThanOrEqual(10);
    const mineOf = (i: number) => {
      const subject = subjectOf(credentials[i]!);
      return (k: string) => k.startsWith(budgetKey(subject, "")) || k.startsWith(`${idempotencyScope(subject)}:`);
    };
    let usage = final;
    for (const i of targets) {
      const before = usage;
      usage = reset(usage, { credential: credentials[i]! }, now, config);
      const subject = subjectOf(credentials[i]!);
      // its windows (general, audience, write) and its idempotency record were there, and are gone
      for (const k of ["general", "audience", "write"].map((b) => budgetKey(subject, b)).concat(`${idempotencyScope(subject)}:idem-${i}`)) {
        const kind = k.startsWith("b:") ? "windows" : "keys";
        expect(recordIn(usageData(before)[kind] as Buckets<unknown>, k), `${k} before`).toBeDefined();
        expect(recordIn(usageData(usage)[kind] as Buckets<unknown>, k), `${k} after`).toBeUndefined();
      }
      // its test-send count was there, and is gone
      const capOf = (u: Usage) => recordIn(usageData(u).caps, capKey("testSend", subject, "")) as { days: Record<string, unknown> } | undefined;
      expect(Object.keys(capOf(before)?.days ?? {}).length, `test-send count of key_${i} before`).toBeGreaterThan(0);
      const cap = capOf(usage);
      expect(cap === undefined || Object.keys(cap.days).length === 0, `test-send count of key_${i}`).toBe(true);
    }
    // exactly those records went: every other record is the same object as before
    for (const kind of ["windows", "keys"] as const) {
      const was = recordsIn(usageData(final)[kind] as Buckets<unknown>);
      const is = recordsIn(usageData(usage)[kind] as Buckets<unknown>);
      const mine = targets.map(mineOf);
      const kept = was.filter(([k]) => !mine.some((m) => m(k)));
      expect(was.length - kept.length).toBe(targets.length * (kind === "windows" ? 3 : 1));
      expect(is).toHaveLength(kept.length);
      const now_ = new Map(is);
      for (const [k, record] of kept) if (now_.get(k) !== record) expect(now_.get(k), k).toBe(record);
      expectWellPlaced(usageData(usage)[kind] as Buckets<unknown>);
    }
    expect(count(usage, "caps")).toBe(count(final, "caps")); // cap records stay, without today's count
    // one more read each: the reset credentials are allowed again, a sample of the others still refused
    const reset_ = new Set(targets);
    for (const i of targets) expect(step(usage, { who: i, request: read(), now }).decision.status, `key_${i}`).toBe(200);
    for (let i = 5; i < N; i += 59) if (!reset_.has(i)) expect(step(usage, { who: i, request: read(), now }).decision.status, `key_${i}`).toBe(429);
  });

  it("changeIn/recordIn over random key sets: splits and removals never lose, duplicate or misplace a record, from the new layout or a flattened old one", () => {
    const same = keepAll<number>(() => Infinity);
    fc.assert(
      // store keys always start with a kind prefix ("b:", "k:", "t:", "d:"), as here; more than 256 × 16
      // keys: some bucket holds more than 16, so some split (with 3 000, an even spread split none)
      fc.property(fc.string({ maxLength: 8 }), fc.integer({ min: 256 * LEAF_MAX + 1, max: 6000 }), fc.array(fc.nat(), { maxLength: 800 }), (prefix, n, removals) => {
        const keys = Array.from({ length: n }, (_, i) => `k:${prefix}.${i}`);
        let buckets: Buckets<number> = usageData(emptyUsage()).windows as unknown as Buckets<number>;
        keys.forEach((k, i) => (buckets = changeIn(buckets, k, () => i, same)));
        expect(splitStats(buckets as Buckets<unknown>).arrays, "the buckets split").toBeGreaterThan(0);
        const removed = new Set(removals.map((n) => keys[n % keys.length]!));
        const want = new Map(keys.flatMap((k, i) => (removed.has(k) ? [] : [[k, i] as const])));
        for (const start of [buckets, flattenBuckets(buckets)]) {
          let b = start;
          for (const k of removed) b = changeIn(b, k, () => undefined, same);
          expect(new Map(recordsIn(b))).toEqual(want);
          expect(recordsIn(b)).toHaveLength(want.size);
          expect(keys.filter((k) => recordIn(b, k) !== want.get(k)), "keys read wrong").toEqual([]);
          // the new layout keeps every leaf within LEAF_MAX (a flattened old one keeps its big leaves where nothing was written)
          if (start === buckets) expect(splitStats(b as Buckets<unknown>).maxLeaf).toBeLessThanOrEqual(LEAF_MAX);
        }
      }),
      { seed: 20_261_123, numRuns: 8 },
    );
  });
});

/** The node at (outer, inner) a key hashes to (as recordIn finds it). */
function topNodeOf<T>(buckets: Buckets<T>, key: string): BucketNode<T> | undefined {
  const h = fnv1a(key);
  return slotOf(slotOf(buckets, h & 15), (h >>> 4) & 15);
}
