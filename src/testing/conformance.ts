/**
 * `describeStoreConformance`: a vitest suite that any {@link PolicyStore} runs to prove it behaves
 * like `MemoryStore`, the reference model. Scripted cases pin each rule of the store contract with
 * literal expectations; two differential properties then drive the store and a `MemoryStore`
 * through the same random `ChargeRequest` programs, and the same random policy traces through
 * `createPolicy`, and compare every outcome.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { defineConfig } from "../config.js";
import { dayOf } from "../calendar.js";
import { MemoryStore } from "../memory-store.js";
import type { ResetRequest } from "../reset.js";
import { IDEMPOTENCY_TTL_MS, type BudgetCharge, type CapCharge, type ChargeOutcome, type ChargeRequest, type PolicyStore, type WindowReading } from "../store.js";
import type { CapName, Decision, ReleaseTicket } from "../types.js";
import { arbTrace } from "./arbitraries.js";
import { runPolicyTrace, type TraceEntry } from "./trace.js";

/** Makes a fresh store for one test (or one property run); may be async. */
export type StoreFactory<S extends PolicyStore = PolicyStore> = () => S | Promise<S>;

/** Options of {@link describeStoreConformance}. */
export interface StoreConformanceOptions<S extends PolicyStore = PolicyStore> {
  /** Called with every store the suite made, once the test or property run is done (close connections, flush keys). */
  cleanup?: (store: S) => void | Promise<void>;
  /** Runs of each differential property. Default 50. */
  numRuns?: number;
  /** fast-check seed, for reproducible runs. Default: fast-check's (random). */
  seed?: number;
  /** Steps per random program or trace, at most. Default 150. */
  maxSteps?: number;
  /** Time of the scripted cases (ms since the epoch). Default 2031-05-14 09:00 UTC. */
  startTime?: number;
  /** Per-test timeout (ms). Default 120 000. */
  timeout?: number;
  /** Run the `reset` cases (and reset steps in the random programs). Default true; false for a store without `reset`. */
  reset?: boolean;
}

/** An outcome with what may legitimately differ between stores removed: the member's value (only its presence counts) and `now`. */
export interface ComparableOutcome {
  kind: ChargeOutcome["kind"];
  windows: WindowReading[];
  replay?: boolean;
  counted?: boolean;
  fingerprint?: string;
  count?: number;
}

/**
 * Reduces a store's outcome to what every conforming store must agree on.
 *
 * @param outcome - what `PolicyStore.charge` returned.
 * @returns kind, windows, and per kind: replay and whether a cap member was made, the conflicting fingerprint, or the cap count.
 * @example
 * expect(comparableOutcome(await store.charge(request))).toEqual(comparableOutcome(new MemoryStore().charge(request)));
 */
export function comparableOutcome(outcome: ChargeOutcome): ComparableOutcome {
  const windows = outcome.windows.map((w) => ({ count: w.count, resetAt: w.resetAt }));
  switch (outcome.kind) {
    case "budget_spent":
      return { kind: outcome.kind, windows };
    case "charged":
      return { kind: outcome.kind, windows, replay: outcome.replay, counted: outcome.member !== undefined };
    case "conflict":
      return { kind: outcome.kind, windows, fingerprint: outcome.fingerprint };
    case "cap_reached":
      return { kind: outcome.kind, windows, count: outcome.count };
  }
}

/** A decision with the cap member's value removed (stores name members as they like). */
export function comparableDecision(decision: Decision): unknown {
  if (decision.release === undefined) return decision;
  const { member: _member, ...ticket } = decision.release;
  return { ...decision, release: ticket };
}

const DAY_MS = 86_400_000;

/** Builders for the scripted cases. */
function kit(start: number, prefix: string) {
  let n = 0;
  return {
    budget: (name: string, limit: number, windowSeconds: number): BudgetCharge => ({ key: `${prefix}b:${name}`, limit, windowMs: windowSeconds * 1000 }),
    cap: (name: string, limit: number, now: number, offsetMs = 0, cap: CapName = "dispatch"): CapCharge => ({
      name: cap,
      key: `${prefix}c:${name}`,
      limit,
      offsetMs,
      ...dayOf(now, offsetMs),
    }),
    key: (key: string, fingerprint: string, ttlMs = IDEMPOTENCY_TTL_MS) => ({ key: `${prefix}k:${key}`, fingerprint, ttlMs }),
    /** An idempotency key in a credential's scope (what `reset` clears by scope). */
    scopedKey: (scope: string, key: string, fingerprint: string) => ({ key: `${prefix}s:${scope}:${key}`, fingerprint, ttlMs: IDEMPOTENCY_TTL_MS, scope: `${prefix}s:${scope}` }),
    scope: (scope: string) => `${prefix}s:${scope}`,
    request: (at: number, budgets: readonly BudgetCharge[], extra: Partial<Pick<ChargeRequest, "refused" | "idempotency" | "cap">> = {}): ChargeRequest => ({
      id: `${prefix}r${++n}`,
      now: start + at,
      budgets,
      refused: false,
      ...extra,
    }),
    ticket: (request: ChargeRequest, outcome: ChargeOutcome): ReleaseTicket => {
      if (outcome.kind !== "charged" || outcome.member === undefined || request.cap === undefined) throw new Error("no cap charge to release");
      const ticket = { cap: request.cap.name, key: request.cap.key, day: request.cap.day, member: outcome.member };
      return request.idempotency === undefined ? ticket : { ...ticket, idempotencyKey: request.idempotency.key };
    },
  };
}

/**
 * Declares a vitest suite that proves a {@link PolicyStore} behaves like `MemoryStore`: budgets
 * (fixed windows, all or nothing, a refusal charging nothing), windows rolling over, refused
 * requests, idempotency (replay, conflict, expiry), daily caps (per key and day), release
 * (once only, and the key counts again), `read()`, `reset()` (unless `reset: false`), concurrent
 * charges, and two differential
 * properties against `MemoryStore`.
 *
 * The store must decide with the times the suite passes (`ChargeRequest.now`, and `now` of
 * `release` and `read`); a store that reads its own clock must be run in a mode that uses the
 * request's time. A store may report `ChargeOutcome.now`; it must then equal the request's.
 * Keys are namespaced per test, so a shared backend works, but a fresh one per call is simplest.
 *
 * @param name - shown in the suite's title.
 * @param makeStore - a fresh store per test and per property run; may be async.
 * @param options - `cleanup` hook, `numRuns` (default 50), `seed`, `maxSteps` (default 150), `startTime`, `timeout`.
 * @example
 * // test/redis-store.test.ts
 * import { Redis } from "ioredis";
 * import { describeStoreConformance } from "newsletter-policy/testing";
 * import { RedisStore } from "newsletter-policy/redis";
 *
 * const redis = new Redis();
 * let n = 0;
 * describeStoreConformance("RedisStore", () => new RedisStore({ redis: (c, a) => redis.call(c, a), prefix: `conformance:${++n}:` }), {
 *   cleanup: async () => { const keys = await redis.keys("conformance:*"); if (keys.length) await redis.del(...keys); },
 *   numRuns: 30,
 *   seed: 42,
 * });
 */
export function describeStoreConformance<S extends PolicyStore>(name: string, makeStore: StoreFactory<S>, options: StoreConformanceOptions<S> = {}): void {
  const start = options.startTime ?? Date.UTC(2031, 4, 14, 9, 0, 0);
  const timeout = options.timeout ?? 120_000;
  const numRuns = options.numRuns ?? 50;
  const maxSteps = options.maxSteps ?? 150;
  const made: S[] = [];
  let suite = 0;

  async function fresh(): Promise<S> {
    const store = await makeStore();
    made.push(store);
    return store;
  }

  async function charge(store: PolicyStore, request: ChargeRequest): Promise<ChargeOutcome> {
    const outcome = await store.charge(request);
    if (outcome.now !== undefined) expect(outcome.now, "ChargeOutcome.now, when reported, is the request's now").toBe(request.now);
    expect(outcome.windows, "ChargeOutcome.windows lines up with ChargeRequest.budgets").toHaveLength(request.budgets.length);
    return outcome;
  }

  async function read(store: PolicyStore, budgets: readonly BudgetCharge[], now: number): Promise<WindowReading[]> {
    return (await store.read(budgets, now)).map((w) => ({ count: w.count, resetAt: w.resetAt }));
  }

  function scripted(title: string, body: (store: S, k: ReturnType<typeof kit>) => Promise<void>): void {
    it(title, async () => {
      const store = await fresh();
      await body(store, kit(start, `conf${++suite}:`));
    }, timeout);
  }

  describe(`PolicyStore conformance: ${name}`, () => {
    afterEach(async () => {
      const stores = made.splice(0);
      if (options.cleanup) for (const store of stores) await options.cleanup(store);
    });

    scripted("charges a budget up to its limit, then answers budget_spent and charges nothing", async (store, k) => {
      const g = k.budget("general", 3, 10);
      const counts: ComparableOutcome[] = [];
      for (let i = 0; i < 4; i++) counts.push(comparableOutcome(await charge(store, k.request(i * 1000, [g]))));
      expect(counts).toEqual([
        { kind: "charged", windows: [{ count: 1, resetAt: start + 10_000 }], replay: false, counted: false },
        { kind: "charged", windows: [{ count: 2, resetAt: start + 10_000 }], replay: false, counted: false },
        { kind: "charged", windows: [{ count: 3, resetAt: start + 10_000 }], replay: false, counted: false },
        { kind: "budget_spent", windows: [{ count: 3, resetAt: start + 10_000 }] },
      ]);
      expect(await read(store, [g], start + 5000)).toEqual([{ count: 3, resetAt: start + 10_000 }]);
    });

    scripted("a window ends at its start + windowMs; the next one starts at the first charge after it (fixed windows)", async (store, k) => {
      const w = k.budget("write", 2, 5);
      await charge(store, k.request(0, [w]));
      await charge(store, k.request(1000, [w]));
      expect(comparableOutcome(await charge(store, k.request(4999, [w]))).kind).toBe("budget_spent");
      expect(comparableOutcome(await charge(store, k.request(5000, [w])))).toMatchObject({ kind: "charged", windows: [{ count: 1, resetAt: start + 10_000 }] });
      expect(comparableOutcome(await charge(store, k.request(7000, [w])))).toMatchObject({ kind: "charged", windows: [{ count: 2, resetAt: start + 10_000 }] });
      expect(await read(store, [w], start + 10_000)).toEqual([{ count: 0, resetAt: 0 }]);
      expect(comparableOutcome(await charge(store, k.request(12_345, [w])))).toMatchObject({ windows: [{ count: 1, resetAt: start + 17_345 }] });
    });

    scripted("all or nothing: when one budget is spent, none of the request's budgets is charged", async (store, k) => {
      const g = k.budget("general", 5, 60);
      const a = k.budget("audience", 1, 60);
      await charge(store, k.request(0, [g, a]));
      expect(comparableOutcome(await charge(store, k.request(1, [g, a])))).toEqual({
        kind: "budget_spent",
        windows: [
          { count: 1, resetAt: start + 60_000 },
          { count: 1, resetAt: start + 60_000 },
        ],
      });
      expect(await read(store, [g, a], start + 2)).toEqual([
        { count: 1, resetAt: start + 60_000 },
        { count: 1, resetAt: start + 60_000 },
      ]);
      expect(comparableOutcome(await charge(store, k.request(3, [g])))).toMatchObject({ kind: "charged", windows: [{ count: 2 }] });
    });

    scripted("a refused request (refused: true) charges its budgets and nothing else: no key recorded, no cap counted", async (store, k) => {
      const g = k.budget("general", 10, 60);
      const refused = await charge(store, k.request(0, [g], { refused: true, idempotency: k.key("k1", "POST /a"), cap: k.cap("nl", 1, start) }));
      expect(comparableOutcome(refused)).toEqual({ kind: "charged", windows: [{ count: 1, resetAt: start + 60_000 }], replay: false, counted: false });
      // the key was not recorded: another fingerprint is no conflict; the cap still has its one place
      const other = await charge(store, k.request(1, [g], { idempotency: k.key("k1", "POST /b"), cap: k.cap("nl", 1, start) }));
      expect(comparableOutcome(other)).toEqual({ kind: "charged", windows: [{ count: 2, resetAt: start + 60_000 }], replay: false, counted: true });
      const full = await charge(store, k.request(2, [g], { cap: k.cap("nl", 1, start) }));
      expect(comparableOutcome(full)).toEqual({ kind: "cap_reached", windows: [{ count: 3, resetAt: start + 60_000 }], count: 1 });
    });

    scripted("idempotency: a retry with the same key and fingerprint is a replay; with a cap it counts once and is not refused by it", async (store, k) => {
      const g = k.budget("general", 100, 60);
      const send = (at: number, key?: string) => k.request(at, [g], { cap: k.cap("nl", 2, start + at), ...(key && { idempotency: k.key(key, "POST /articles/a_1/send") }) });
      expect(comparableOutcome(await charge(store, send(0, "k1")))).toMatchObject({ kind: "charged", replay: false, counted: true });
      expect(comparableOutcome(await charge(store, send(1, "k1")))).toMatchObject({ kind: "charged", replay: true, counted: false });
      expect(comparableOutcome(await charge(store, send(2)))).toMatchObject({ kind: "charged", replay: false, counted: true });
      expect(comparableOutcome(await charge(store, send(3, "k2")))).toEqual({ kind: "cap_reached", windows: [{ count: 4, resetAt: start + 60_000 }], count: 2 });
      expect(comparableOutcome(await charge(store, send(4, "k1")))).toMatchObject({ kind: "charged", replay: true, counted: false });
      const write = (at: number) => k.request(at, [g], { idempotency: k.key("k5", "PATCH /articles/a_1") });
      expect(comparableOutcome(await charge(store, write(5)))).toMatchObject({ kind: "charged", replay: false });
      expect(comparableOutcome(await charge(store, write(6)))).toMatchObject({ kind: "charged", replay: true, windows: [{ count: 7 }] });
    });

    scripted("idempotency: the same key on another fingerprint answers conflict, charging the budgets and not the cap", async (store, k) => {
      const g = k.budget("general", 100, 60);
      await charge(store, k.request(0, [g], { idempotency: k.key("k1", "POST /articles/a_1/send"), cap: k.cap("nl", 1, start) }));
      const conflict = await charge(store, k.request(1, [g], { idempotency: k.key("k1", "POST /articles/a_2/send"), cap: k.cap("nl", 5, start) }));
      expect(comparableOutcome(conflict)).toEqual({ kind: "conflict", windows: [{ count: 2, resetAt: start + 60_000 }], fingerprint: "POST /articles/a_1/send" });
      const next = await charge(store, k.request(2, [g], { cap: k.cap("nl", 2, start) }));
      expect(comparableOutcome(next)).toMatchObject({ kind: "charged", counted: true }); // 1 of 2 before: the conflict counted nothing
    });

    scripted("idempotency: a key lives ttlMs from when it was recorded, then is forgotten", async (store, k) => {
      const g = k.budget("general", 100, 600);
      await charge(store, k.request(0, [g], { idempotency: k.key("k1", "POST /a", 60_000) }));
      expect(comparableOutcome(await charge(store, k.request(59_999, [g], { idempotency: k.key("k1", "POST /b", 60_000) }))).kind).toBe("conflict");
      expect(comparableOutcome(await charge(store, k.request(60_000, [g], { idempotency: k.key("k1", "POST /b", 60_000) })))).toMatchObject({ kind: "charged", replay: false });
      expect(comparableOutcome(await charge(store, k.request(60_001, [g], { idempotency: k.key("k1", "POST /b", 60_000) })))).toMatchObject({ kind: "charged", replay: true });
    });

    scripted("daily caps: counted per key and per day, cap_reached carries the count, a new day starts from zero", async (store, k) => {
      const g = k.budget("general", 100, 60);
      for (const offsetMs of [0, -5 * 3_600_000]) {
        const base = Math.floor(start / DAY_MS) * DAY_MS + 3 * DAY_MS - offsetMs + 3_600_000 - start; // 01:00 at the day start, 3 days on
        const send = (at: number, key: string) => k.request(base + at, [g], { cap: k.cap(`${key}:${offsetMs}`, 2, start + base + at, offsetMs) });
        const outcomes = [];
        for (let i = 0; i < 3; i++) outcomes.push(comparableOutcome(await charge(store, send(i, "c1"))));
        expect(outcomes.map((o) => [o.kind, o.counted ?? o.count])).toEqual([
          ["charged", true],
          ["charged", true],
          ["cap_reached", 2],
        ]);
        expect(comparableOutcome(await charge(store, send(3, "c2")))).toMatchObject({ kind: "charged", counted: true });
        expect(comparableOutcome(await charge(store, send(DAY_MS - 3_600_001, "c1"))).kind).toBe("cap_reached"); // the last ms of the day
        expect(comparableOutcome(await charge(store, send(DAY_MS - 3_600_000, "c1")))).toMatchObject({ kind: "charged", counted: true });
      }
    });

    scripted("release: uncounts once (true, then false), frees the place, and lets the key count again", async (store, k) => {
      const g = k.budget("general", 100, 60);
      const send = (at: number, key?: string) => k.request(at, [g], { cap: k.cap("nl", 1, start + at), ...(key && { idempotency: k.key(key, "POST /articles/a_1/send") }) });
      const first = send(0, "k1");
      const counted = await charge(store, first);
      expect(comparableOutcome(await charge(store, send(1)))).toMatchObject({ kind: "cap_reached", count: 1 });
      const ticket = k.ticket(first, counted);
      expect(await store.release(ticket, start + 2)).toBe(true);
      expect(await store.release(ticket, start + 3)).toBe(false);
      // the key counts again on its next allowed use: a replay that is counted
      const again = await charge(store, send(4, "k1"));
      expect(comparableOutcome(again)).toMatchObject({ kind: "charged", replay: true, counted: true });
      expect(comparableOutcome(await charge(store, send(5, "k1")))).toMatchObject({ kind: "charged", replay: true, counted: false });
      expect(comparableOutcome(await charge(store, send(6)))).toMatchObject({ kind: "cap_reached", count: 1 });
      expect(await store.release(k.ticket(send(4, "k1"), again), start + 7)).toBe(true);
      expect(comparableOutcome(await charge(store, send(8)))).toMatchObject({ kind: "charged", counted: true });
    });

    scripted("members are unique: every counted charge gets its own member", async (store, k) => {
      const g = k.budget("general", 100, 60);
      const members = new Set<string>();
      for (let i = 0; i < 6; i++) {
        const outcome = await charge(store, k.request(i, [g], { cap: k.cap(`nl${i % 2}`, 10, start + i, 0, i % 2 ? "testSend" : "dispatch") }));
        if (outcome.kind === "charged" && outcome.member !== undefined) members.add(outcome.member);
      }
      expect(members.size).toBe(6);
    });

    scripted("read() reports windows without charging; an unused or ended window reads { count: 0, resetAt: 0 }", async (store, k) => {
      const g = k.budget("general", 3, 10);
      const a = k.budget("audience", 3, 20);
      expect(await read(store, [g, a], start)).toEqual([
        { count: 0, resetAt: 0 },
        { count: 0, resetAt: 0 },
      ]);
      await charge(store, k.request(0, [g, a]));
      for (let i = 0; i < 5; i++) expect(await read(store, [g, a], start + 1 + i)).toEqual([
        { count: 1, resetAt: start + 10_000 },
        { count: 1, resetAt: start + 20_000 },
      ]);
      expect(await read(store, [g, a], start + 10_000)).toEqual([
        { count: 0, resetAt: 0 },
        { count: 1, resetAt: start + 20_000 },
      ]);
      expect(comparableOutcome(await charge(store, k.request(10_001, [g])))).toMatchObject({ windows: [{ count: 1, resetAt: start + 20_001 }] });
    });

    scripted("concurrent charges never over-spend a budget or a cap", async (store, k) => {
      const g = k.budget("general", 4, 60);
      const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => charge(store, k.request(i, [g]))));
      expect(outcomes.filter((o) => o.kind === "charged")).toHaveLength(4);
      expect(outcomes.filter((o) => o.kind === "budget_spent")).toHaveLength(6);
      const roomy = k.budget("roomy", 100, 60);
      const sends = await Promise.all(Array.from({ length: 7 }, (_, i) => charge(store, k.request(20 + i, [roomy], { cap: k.cap("busy", 3, start) }))));
      const members = sends.flatMap((o) => (o.kind === "charged" && o.member !== undefined ? [o.member] : []));
      expect(new Set(members).size).toBe(3);
      expect(sends.filter((o) => o.kind === "cap_reached")).toHaveLength(4);
    });

    const resets = options.reset !== false;
    async function resetIn(store: PolicyStore, request: ResetRequest, now: number): Promise<void> {
      expect(typeof store.reset, "the store implements reset (or run the suite with { reset: false })").toBe("function");
      await store.reset!(request, now);
    }

    if (resets) {
      scripted("reset clears the named budget windows, and no other window", async (store, k) => {
        const g = k.budget("general", 2, 60);
        const a = k.budget("audience", 2, 60);
        const other = k.budget("other", 2, 60);
        await charge(store, k.request(0, [g, a, other]));
        await charge(store, k.request(1, [g, a, other]));
        await resetIn(store, { windows: [g.key, a.key], caps: [] }, start + 2);
        expect(await read(store, [g, a, other], start + 3)).toEqual([
          { count: 0, resetAt: 0 },
          { count: 0, resetAt: 0 },
          { count: 2, resetAt: start + 60_000 },
        ]);
        // a cleared window starts again at its next charge
        expect(comparableOutcome(await charge(store, k.request(4, [g])))).toMatchObject({ kind: "charged", windows: [{ count: 1, resetAt: start + 60_004 }] });
        expect(comparableOutcome(await charge(store, k.request(5, [other]))).kind).toBe("budget_spent");
      });

      scripted("reset clears one day's count of the named cap, and no other cap; a reset of another day changes nothing", async (store, k) => {
        const g = k.budget("general", 100, 60);
        const send = (at: number, cap: string) => k.request(at, [g], { cap: k.cap(cap, 2, start + at) });
        for (let i = 0; i < 2; i++) {
          await charge(store, send(i, "nl_a"));
          await charge(store, send(i, "nl_b"));
        }
        const today = k.cap("nl_a", 2, start);
        await resetIn(store, { windows: [], caps: [{ key: today.key, day: today.day - 1, offsetMs: 0 }] }, start + 3);
        expect(comparableOutcome(await charge(store, send(4, "nl_a")))).toMatchObject({ kind: "cap_reached", count: 2 });
        await resetIn(store, { windows: [], caps: [{ key: today.key, day: today.day, offsetMs: 0 }] }, start + 5);
        expect(comparableOutcome(await charge(store, send(6, "nl_a")))).toMatchObject({ kind: "charged", counted: true });
        expect(comparableOutcome(await charge(store, send(7, "nl_b")))).toMatchObject({ kind: "cap_reached", count: 2 });
        expect(await read(store, [g], start + 8)).toEqual([{ count: 7, resetAt: start + 60_000 }]); // budgets untouched
      });

      scripted("reset clears every idempotency record of the named scope, and no other record", async (store, k) => {
        const g = k.budget("general", 100, 60);
        const write = (at: number, scope: string, key: string, fingerprint: string) => k.request(at, [g], { idempotency: k.scopedKey(scope, key, fingerprint) });
        await charge(store, write(0, "c1", "k1", "POST /a"));
        await charge(store, write(1, "c1", "k2", "POST /b"));
        await charge(store, write(2, "c2", "k1", "POST /a"));
        await charge(store, k.request(3, [g], { idempotency: k.key("k1", "POST /a") }));
        await resetIn(store, { windows: [], caps: [], idempotencyScope: k.scope("c1") }, start + 4);
        // c1's keys are new again: another fingerprint is no conflict, and not a replay
        expect(comparableOutcome(await charge(store, write(5, "c1", "k1", "POST /z")))).toMatchObject({ kind: "charged", replay: false });
        expect(comparableOutcome(await charge(store, write(6, "c1", "k2", "POST /z")))).toMatchObject({ kind: "charged", replay: false });
        expect(comparableOutcome(await charge(store, write(7, "c2", "k1", "POST /z")))).toMatchObject({ kind: "conflict", fingerprint: "POST /a" });
        expect(comparableOutcome(await charge(store, k.request(8, [g], { idempotency: k.key("k1", "POST /z") })))).toMatchObject({ kind: "conflict" });
      });

      scripted("a cap charge cleared by reset no longer releases; a reset of nothing recorded is no error", async (store, k) => {
        const g = k.budget("general", 100, 60);
        const first = k.request(0, [g], { cap: k.cap("nl", 1, start), idempotency: k.scopedKey("c1", "k1", "POST /send") });
        const counted = await charge(store, first);
        await resetIn(store, { windows: [], caps: [{ key: first.cap!.key, day: first.cap!.day, offsetMs: 0 }] }, start + 1);
        expect(await store.release(k.ticket(first, counted), start + 2)).toBe(false);
        await resetIn(store, { windows: [k.budget("unused", 1, 1).key], caps: [{ key: k.cap("none", 1, start).key, day: first.cap!.day, offsetMs: 0 }], idempotencyScope: k.scope("nobody") }, start + 3);
      });
    }

    it("differential: random ChargeRequest programs give MemoryStore's outcomes, releases and readings", async () => {
      await fc.assert(
        fc.asyncProperty(arbProgram(maxSteps, resets), async (program) => {
          const store = await fresh();
          const reference = new MemoryStore();
          const prefix = `diff${++suite}:`;
          await runProgram(program, prefix, reference, store, { charge, read });
        }),
        { numRuns, ...(options.seed !== undefined && { seed: options.seed }) },
      );
    }, timeout);

    it("differential: createPolicy over the store decides every request of a trace as over MemoryStore", async () => {
      await fc.assert(
        fc.asyncProperty(arbTrace({ maxSteps }), async (trace) => {
          const store = await fresh();
          const expected = await runPolicyTrace(trace, new MemoryStore());
          const actual = await runPolicyTrace(trace, store);
          const offset = defineConfig(trace.config).dayStartsAtUtcOffsetMinutes * 60_000;
          expected.forEach((want, i) => expect(comparableEntry(actual[i]!, offset), `step ${i}`).toEqual(comparableEntry(want, offset)));
        }),
        { numRuns, ...(options.seed !== undefined && { seed: options.seed }) },
      );
    }, timeout);
  });
}

/** A trace entry with what stores may name differently removed (and a past day's release result: unspecified). */
function comparableEntry(entry: TraceEntry, offsetMs: number): unknown {
  switch (entry.kind) {
    case "request":
      return { kind: entry.kind, decision: comparableDecision(entry.decision) };
    case "release": {
      const sameDay = entry.released?.release !== undefined && entry.released.release.day === dayOf(entry.now, offsetMs).day;
      return { kind: entry.kind, uncounted: sameDay ? entry.uncounted : "past day" };
    }
    case "status":
      return entry;
    default:
      return entry.kind;
  }
}

/** One operation of a random store program. */
type ProgramOp =
  | { op: "charge"; advance: number; budgets: number[]; refused: boolean; idem: [number, number] | null; cap: [number, CapName] | null }
  | { op: "release"; advance: number; pick: number }
  | { op: "read"; advance: number; budgets: number[] }
  | { op: "reset"; advance: number; budgets: number[]; cap: number | null; scope: number | null };

interface Program {
  start: number;
  offsetMs: number;
  ttlMs: number;
  budgets: { limit: number; windowMs: number }[];
  capLimits: number[];
  ops: ProgramOp[];
}

function arbProgram(maxSteps: number, resets: boolean): fc.Arbitrary<Program> {
  const advance = fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 1500 }) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 6 }).map((s) => s * 1000) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 30 }).map((h) => h * 3_600_000) },
  );
  const budgetSet = fc.uniqueArray(fc.nat({ max: 3 }), { minLength: 1, maxLength: 3 });
  const op: fc.Arbitrary<ProgramOp> = fc.oneof(
    {
      weight: 12,
      arbitrary: fc.record({
        op: fc.constant("charge" as const),
        advance,
        budgets: budgetSet,
        refused: fc.boolean().chain((b) => (b ? fc.boolean() : fc.constant(false))),
        idem: fc.option(fc.tuple(fc.nat({ max: 2 }), fc.nat({ max: 2 })), { nil: null }),
        cap: fc.option(fc.tuple(fc.nat({ max: 1 }), fc.constantFrom<CapName>("dispatch", "testSend")), { nil: null }),
      }),
    },
    { weight: 2, arbitrary: fc.record({ op: fc.constant("release" as const), advance, pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant("read" as const), advance, budgets: budgetSet }) },
    ...(resets
      ? [
          {
            weight: 1,
            arbitrary: fc.record({
              op: fc.constant("reset" as const),
              advance,
              budgets: fc.uniqueArray(fc.nat({ max: 3 }), { maxLength: 2 }),
              cap: fc.option(fc.nat({ max: 1 }), { nil: null }),
              scope: fc.option(fc.nat({ max: 1 }), { nil: null }),
            }),
          },
        ]
      : []),
  );
  return fc.record({
    start: fc.integer({ min: Date.UTC(2031, 0, 1), max: Date.UTC(2032, 0, 1) }),
    offsetMs: fc.constantFrom(0, 5 * 3_600_000, -330 * 60_000),
    ttlMs: fc.constantFrom(IDEMPOTENCY_TTL_MS, 3000, 90_000),
    budgets: fc.array(fc.record({ limit: fc.integer({ min: 1, max: 4 }), windowMs: fc.constantFrom(1000, 2000, 5000) }), { minLength: 4, maxLength: 4 }),
    capLimits: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 2, maxLength: 2 }),
    ops: fc.array(op, { minLength: 1, maxLength: maxSteps, size: "max" }),
  });
}

interface Io {
  charge(store: PolicyStore, request: ChargeRequest): Promise<ChargeOutcome>;
  read(store: PolicyStore, budgets: readonly BudgetCharge[], now: number): Promise<WindowReading[]>;
}

/** Runs one program against the reference and the store under test, comparing at every step. */
async function runProgram(program: Program, prefix: string, reference: PolicyStore, store: PolicyStore, io: Io): Promise<void> {
  let now = program.start;
  const budgets = program.budgets.map((b, i): BudgetCharge => ({ key: `${prefix}b${i}`, limit: b.limit, windowMs: b.windowMs }));
  const tickets: { expected: ReleaseTicket; actual: ReleaseTicket }[] = [];
  for (let step = 0; step < program.ops.length; step++) {
    const op = program.ops[step]!;
    now += op.advance;
    const at = `step ${step} (${op.op} at +${now - program.start} ms)`;
    if (op.op === "reset") {
      // a credential-like reset: some windows, one cap's today, one scope of idempotency records
      const request: ResetRequest = {
        windows: op.budgets.map((i) => budgets[i]!.key),
        caps: op.cap === null ? [] : [{ key: `${prefix}c${op.cap}`, day: dayOf(now, program.offsetMs).day, offsetMs: program.offsetMs }],
        ...(op.scope !== null && { idempotencyScope: `${prefix}s${op.scope}` }),
      };
      await reference.reset!(request, now);
      await store.reset!(request, now);
    } else if (op.op === "read") {
      const chosen = op.budgets.map((i) => budgets[i]!);
      expect(await io.read(store, chosen, now), at).toEqual(await io.read(reference, chosen, now));
    } else if (op.op === "release") {
      if (tickets.length === 0) continue;
      const pair = tickets[op.pick % tickets.length]!;
      const expected = await reference.release(pair.expected, now);
      const actual = await store.release(pair.actual, now);
      // Releasing a past day's charge is unspecified: it no longer counts toward anything.
      if (pair.expected.day === dayOf(now, program.offsetMs).day) expect(actual, at).toBe(expected);
    } else {
      const [capIndex, capName] = op.cap ?? [0, "dispatch" as CapName];
      const request: ChargeRequest = {
        id: `${prefix}r${step}`,
        now,
        budgets: op.budgets.map((i) => budgets[i]!),
        refused: op.refused,
        // keys 0 and 2 in scope 0, key 1 in scope 1 (what a reset clears by scope)
        ...(op.idem && { idempotency: { key: `${prefix}s${op.idem[0] % 2}:k${op.idem[0]}`, fingerprint: `POST /f${op.idem[1]}`, ttlMs: program.ttlMs, scope: `${prefix}s${op.idem[0] % 2}` } }),
        ...(op.cap && {
          cap: { name: capName, key: `${prefix}c${capIndex}`, limit: program.capLimits[capIndex]!, offsetMs: program.offsetMs, ...dayOf(now, program.offsetMs) },
        }),
      };
      const expected = await io.charge(reference, request);
      const actual = await io.charge(store, request);
      expect(comparableOutcome(actual), at).toEqual(comparableOutcome(expected));
      if (expected.kind === "charged" && expected.member !== undefined && actual.kind === "charged" && actual.member !== undefined) {
        const ticket = (member: string): ReleaseTicket => ({
          cap: capName,
          key: request.cap!.key,
          day: request.cap!.day,
          member,
          ...(request.idempotency && { idempotencyKey: request.idempotency.key }),
        });
        tickets.push({ expected: ticket(expected.member), actual: ticket(actual.member) });
      }
    }
  }
}
