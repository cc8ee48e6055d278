/**
 * Charges batched per turn of the event loop (src/redis/batcher.ts, scripts/charge-batch.ts), on the
 * real Redis: a batch decides exactly as the same charges one by one in the order they were handed
 * over, in fewer round trips; one charge failing fails only itself; a batch resent after a timeout
 * counts each charge once; `maxInFlight` counts charges.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { createPolicy, MemoryStore, PolicyConfigError, type Credential, type PolicyOptions } from "../../src/index.js";
import { RedisOverloadError, RedisStore, RedisTimeoutError, type RedisCall } from "../../src/redis/index.js";
import { CHARGE, decodeCharge } from "../../src/redis/scripts/charge.js";
import type { ChargeOutcome } from "../../src/store.js";
import { CHARGE_PLAIN, loneCharge } from "../../src/redis/scripts/charge-plain.js";
import { batchCall, batchReplies, CHARGE_BATCH, decodeBatch } from "../../src/redis/scripts/charge-batch.js";
import { budgetKey, subjectOf } from "../../src/store-keys.js";
import { plainMembers, T0, key } from "../fixtures.js";
import { counting, ioredisCall, lateFirstSend, sharedRedis } from "./helpers.js";

const { redis, root } = sharedRedis("batch");
let run = 0;
const prefix = () => `${root}${++run}:`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const config: PolicyOptions = {
  budgets: { general: { limit: 12, window: 10 }, audience: { limit: 5, window: 5 }, write: { limit: 6, window: 20 } },
  caps: { dispatch: { limit: 3 }, testSend: { limit: 2 } },
};
const credentials: Credential[] = [
  key({ nl_1: { content: "write", audience: "write", sending: "write" } }, true, "key_a"),
  key({ nl_1: { content: "write", sending: "write" } }, false, "key_b"),
  key({ nl_1: { content: "read", audience: "read" } }, false, "key_c"),
];
const roles = { nl_1: "owner" };
const idempotencyKey = fc.option(fc.constantFrom("k1", "k2"), { nil: undefined });
const request = fc.oneof(
  fc.constant({ method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" }),
  fc.constant({ method: "GET", path: "/me" }),
  fc.record({ method: fc.constant("POST"), path: fc.constant("/articles/a_1/send"), newsletter: fc.constant("nl_1"), idempotencyKey }),
  fc.record({
    method: fc.constant("POST"),
    path: fc.constant("/articles/a_1/test-send"),
    newsletter: fc.constant("nl_1"),
    idempotencyKey,
    body: fc.record({ to: fc.array(fc.constant("a@example.com"), { minLength: 1, maxLength: 3 }) }),
  }),
  fc.record({ method: fc.constant("PATCH"), path: fc.constant("/articles/a_1"), newsletter: fc.constant("nl_1"), idempotencyKey }),
);
const check = fc.record({ who: fc.nat(credentials.length - 1), request });
/** A trace: turns, each a group of checks made at once, and the time that passes after it. */
const turns = fc.array(fc.record({ checks: fc.array(check, { minLength: 1, maxLength: 40 }), advance: fc.constantFrom(0, 0, 1_000, 5_000, 20_000) }), { minLength: 1, maxLength: 6 });

function counter(): () => string {
  let n = 0;
  return () => String(++n);
}

describe("RedisStore batches the charges of one turn (batch)", () => {
  it("a batch decides exactly as the same charges one by one, in the order they were handed over (differential against MemoryStore, fast-check, fixed seed)", async () => {
    let checks = 0;
    let roundTrips = 0;
    await fc.assert(
      fc.asyncProperty(turns, async (trace) => {
        let now = T0;
        const clock = () => now;
        const call = counting(ioredisCall(redis));
        const memory = createPolicy({ store: new MemoryStore(), config, clock, generateId: counter() });
        const batched = createPolicy({ store: new RedisStore({ redis: call, prefix: prefix(), batch: 7 }), config, clock, generateId: counter() });
        for (const turn of trace) {
          // all of a turn's checks at once: their charges reach the store in this turn
          const actual = await Promise.all(turn.checks.map((c) => batched.check(c.request, { credential: credentials[c.who]!, roles })));
          for (const [i, c] of turn.checks.entries()) {
            const expected = await memory.check(c.request, { credential: credentials[c.who]!, roles });
            expect(actual[i]).toEqual(plainMembers(expected));
          }
          checks += turn.checks.length;
          now += turn.advance;
        }
        roundTrips += call.calls;
      }),
      { seed: 20_261_123, numRuns: 40 },
    );
    console.log(`batch differential: ${checks} checks in ${roundTrips} round trips`);
    expect(roundTrips).toBeLessThan(checks / 2);
  });

  it("50 checks made at once are 4 round trips with batch: 16 (16 + 16 + 16 + 2), 50 with batch: 1, and count the same", async () => {
    const credential = credentials[0]!;
    for (const [batch, trips] of [[16, 4], [1, 50], [64, 1]] as const) {
      const call = counting(ioredisCall(redis));
      const store = new RedisStore({ redis: call, prefix: prefix(), batch });
      const policy = createPolicy({ store, clock: () => T0, config });
      const decisions = await Promise.all(Array.from({ length: 50 }, () => policy.check({ method: "GET", path: "/me" }, { credential, roles })));
      expect(call.calls, `batch: ${batch}`).toBe(trips);
      expect(decisions.filter((d) => d.allowed)).toHaveLength(12);
      expect(decisions.filter((d) => d.status === 429)).toHaveLength(38);
    }
  });

  it("a lone charge is a script of one charge, sent at the end of its turn: CHARGE_PLAIN when plain, else CHARGE (for one charge, either costs Redis less than a batch of one)", async () => {
    const scripts: string[] = [];
    const call = counting((command, args) => {
      scripts.push(args[0]!);
      return ioredisCall(redis)(command, args);
    });
    const store = new RedisStore({ redis: call, prefix: prefix() });
    const charge = store.charge({ id: "x", now: T0, budgets: [{ key: "b:lone", limit: 5, windowMs: 1_000 }], refused: false });
    expect(call.calls, "nothing sent before the turn ends").toBe(0);
    await expect(charge).resolves.toMatchObject({ kind: "charged", windows: [{ count: 1 }] });
    expect(call.calls).toBe(1);
    const cap = { name: "dispatch" as const, key: "d:4.nl_1", day: 1, limit: 5, resetAt: T0 + 1_000, offsetMs: 0 };
    await expect(store.charge({ id: "y", now: T0, budgets: [{ key: "b:lone", limit: 5, windowMs: 1_000 }], refused: false, cap })).resolves.toMatchObject({ kind: "charged", member: "m1", windows: [{ count: 2 }] });
    expect(scripts, "CHARGE_PLAIN for the plain charge, CHARGE for the one with a cap, not a batch of one").toEqual([CHARGE_PLAIN.sha, CHARGE.sha]);
  });

  it("one charge failing in a batch (its budget key holds a string: WRONGTYPE) fails only itself: 503 for it, the others charged", async () => {
    const p = prefix();
    const store = new RedisStore({ redis: ioredisCall(redis), prefix: p });
    const errors: unknown[] = [];
    const policy = createPolicy({ store, clock: () => T0, config, onStoreError: (e) => errors.push(e) });
    const three = ["key_x", "key_y", "key_z"].map((id) => key({ nl_1: { audience: "read" } }, true, id));
    await redis.set(`${p}${budgetKey(subjectOf(three[1]!), "general")}`, "not a hash");
    const decisions = await Promise.all(three.map((credential) => policy.check({ method: "GET", path: "/me" }, { credential, roles })));
    expect(decisions.map((d) => d.status)).toEqual([200, 503, 200]);
    expect(String(errors[0])).toContain("WRONGTYPE");
    expect(errors).toHaveLength(1);
    const [read] = await store.read([{ key: budgetKey(subjectOf(three[2]!), "general"), limit: 12, windowMs: 10_000 }], T0);
    expect(read).toEqual({ count: 1, resetAt: T0 + 10_000 });
  });

  it("a batch resent after a timeout counts each of its charges once; the late original is answered from each charge's memo", async () => {
    const slowFirst = lateFirstSend(ioredisCall(redis), 1_200);
    const store = new RedisStore({ redis: slowFirst, prefix: prefix(), timeoutMs: 1_000, retries: 1 });
    const budgets = (i: number) => [{ key: `b:resend:${i}`, limit: 100, windowMs: 60_000 }];
    const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => store.charge({ id: `r${i}`, now: T0, budgets: budgets(i), refused: false })));
    for (const outcome of outcomes) expect(outcome).toMatchObject({ kind: "charged", windows: [{ count: 1 }] });
    const late = (await slowFirst.original()) as unknown[];
    expect(late[0]).toBe("b");
    expect(late, "the batch's kind, Redis's time and the 10 charges' replies, flat: 5 parts each").toHaveLength(2 + 10 * 5);
    // plain charges: CHARGE_PLAIN's replies, { 'C', time, now, count, resetAt }
    const parts = batchReplies(late, Array(10).fill(1));
    expect(parts).toHaveLength(10);
    for (const part of parts) expect([part[0], String(part[3])]).toEqual(["C", "1"]);
    for (let i = 0; i < 10; i++) expect(await store.read(budgets(i), T0)).toEqual([{ count: 1, resetAt: T0 + 60_000 }]);
  });

  it("with clock redis a batch's plain charges decide at Redis's time when the batch started, not at the now the host sent", async () => {
    const p = prefix();
    const input = (i: number) => ({ clock: "r" as const, now: T0, nonce: `redis-clock${i}`, memoTtlMs: 60_000, memo: "r:redis-clock", refused: false, budgets: [{ key: `b:redis-clock:${i}`, limit: 5, windowMs: 60_000 }], idempotency: undefined, cap: undefined, key: (k: string) => `${p}${k}` });
    const redisMs = async () => {
      const [s, us] = await redis.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    const { keys, args } = batchCall([input(0), input(1), input(2)]);
    const before = await redisMs();
    const reply = await ioredisCall(redis)("EVAL", [CHARGE_BATCH.source, String(keys.length), ...keys, ...args]);
    const after = await redisMs();
    const parts = batchReplies(reply, [1, 1, 1]);
    // plain replies: { 'C', time, now, count, resetAt }; one now for all three, Redis's, and the windows from it
    expect(new Set(parts.map((part) => String(part[2]))).size, "one now for the batch's plain charges").toBe(1);
    const now = Number(parts[0]![2]);
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(after);
    for (const part of parts) expect([part[0], Number(part[3]), Number(part[4])]).toEqual(["C", 1, now + 60_000]);
  });

  it("a batch's flat reply is split by each reply's kind and its charge's budgets; one whose parts do not add up is refused whole, never answered from another charge's parts", () => {
    const reply = ["b", 7, "C", 7, "", 1, 100, 2, 200, "!", "WRONGTYPE", "c", 7, "", "0", "m1", 3, 300, "S", 7, "", 5, 500];
    expect(batchReplies(reply, [2, 0, 1, 1])).toEqual([["C", 7, "", 1, 100, 2, 200], ["!", "WRONGTYPE"], ["c", 7, "", "0", "m1", 3, 300], ["S", 7, "", 5, 500]]);
    expect(decodeBatch(reply, [2, 0, 1, 1]).map((o) => (o instanceof Error ? "error" : o.kind))).toEqual(["charged", "error", "charged", "budget_spent"]);
    // one budget too many or too few for any charge: the parts no longer add up
    for (const budgets of [[1, 0, 1, 1], [2, 0, 2, 1], [2, 0, 1, 0], [2, 0, 1], [2, 0, 1, 1, 1]]) {
      expect(() => batchReplies(reply, budgets), String(budgets)).toThrow(/unexpected reply to a batch/);
    }
  });

  it("a batch of plain and full charges whose memos fall in two memo hashes, resent after a timeout: each charge counted once, every late reply from its memo", async () => {
    const scripts: string[] = [];
    const slowFirst = lateFirstSend(ioredisCall(redis), 1_200);
    const watched: RedisCall = (command, args) => (scripts.push(args[0]!), slowFirst(command, args));
    const store = new RedisStore({ redis: watched, prefix: prefix(), timeoutMs: 1_000, retries: 1, dedupeMs: 1_000 });
    const budgets = (i: number) => [{ key: `b:mixed:${i % 3}`, limit: 100, windowMs: 60_000 }];
    const cap = (i: number) => ({ name: "dispatch" as const, key: `d:mixed:${i}`, day: 1, limit: 5, resetAt: T0 + 86_400_000, offsetMs: 0 });
    // even: budgets only (plain); odd: with a cap (full); now in two memo slots (dedupeMs 1 000)
    const requests = Array.from({ length: 12 }, (_, i) => ({ id: `x${i}`, now: T0 + (i < 6 ? 0 : 1_000), budgets: budgets(i), refused: false, ...(i % 2 === 1 ? { cap: cap(i) } : {}) }));
    const outcomes = await Promise.all(requests.map((r) => store.charge(r)));
    expect(scripts, "one batch, sent twice").toEqual([CHARGE_BATCH.sha, CHARGE_BATCH.sha]);
    outcomes.forEach((o, i) => expect(o, `charge ${i}`).toMatchObject(i % 2 === 1 ? { kind: "charged", member: "m" + String((i + 1) / 2) } : { kind: "charged" }));
    const late = batchReplies(await slowFirst.original(), Array(12).fill(1));
    // even: plain (CHARGE_PLAIN's reply, C, its first count at 3); odd: full (CHARGE's, c, at 5)
    expect(late.map((part) => String(part[0]))).toEqual(Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? "C" : "c")));
    // the late original changed nothing: 4 charges on each of the 3 budget keys, one member on each cap
    for (let k = 0; k < 3; k++) expect((await store.read(budgets(k), T0 + 1_000))[0]!.count, `budget ${k}`).toBe(4);
    expect(late.map((part, i) => String(part[i % 2 === 0 ? 3 : 5])).sort()).toEqual(outcomes.map((o) => String(o.windows[0]!.count)).sort());
  });

  it("maxInFlight counts charges, not commands: 30 charges at once against a Redis that never answers, maxInFlight 10 → 10 sent (one batch), 20 refused at once", async () => {
    const hanging = counting(() => new Promise(() => {}));
    const store = new RedisStore({ redis: hanging, prefix: prefix(), maxInFlight: 10, timeoutMs: 50, retries: 0 });
    const settled = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => store.charge({ id: `h${i}`, now: T0, budgets: [{ key: "b:h", limit: 5, windowMs: 1_000 }], refused: false })));
    expect(hanging.calls).toBe(1);
    expect(store.inFlight).toBe(10);
    const reasons = settled.map((s) => (s.status === "rejected" ? (s.reason as Error).name : s.status));
    expect(reasons.filter((r) => r === "RedisOverloadError")).toHaveLength(20);
    expect(reasons.filter((r) => r === "RedisTimeoutError")).toHaveLength(10);
    expect(settled.some((s) => s.status === "rejected" && s.reason instanceof RedisOverloadError)).toBe(true);
  });

  it("a batch resent after a timeout stays within maxInFlight while its first send is unsettled: the resend is refused, never sent past the bound (regression: 16 charges, maxInFlight 20, 32 were in flight)", async () => {
    let peak = 0;
    let store: RedisStore | undefined;
    const late = lateFirstSend(ioredisCall(redis), 150);
    const slowFirst: RedisCall = (command, args) => {
      // read once the send is counted (Link counts it after handing it to the client)
      queueMicrotask(() => (peak = Math.max(peak, store!.inFlight)));
      return late(command, args);
    };
    store = new RedisStore({ redis: slowFirst, prefix: prefix(), maxInFlight: 20, timeoutMs: 50, retries: 1 });
    const settled = await Promise.allSettled(Array.from({ length: 16 }, (_, i) => store!.charge({ id: `m${i}`, now: T0, budgets: [{ key: `b:bound:${i}`, limit: 5, windowMs: 60_000 }], refused: false })));
    expect(late.calls, "the resend was not sent").toBe(1);
    expect(peak).toBeLessThanOrEqual(16);
    expect(store.inFlight).toBeLessThanOrEqual(20);
    // with no room to resend, each caller waited for the first send until it gave up (100 ms)
    for (const s of settled) expect(s.status === "rejected" && s.reason instanceof RedisTimeoutError, JSON.stringify(s)).toBe(true);
    await sleep(200);
    expect(store.inFlight).toBe(0);
  });

  // Regression: a resend refused for maxInFlight answered 503 at once, at the first timeout, while the
  // command already sent carried the call's later deadline (timeoutMs × (retries + 1)) and charged
  // when it ran in between: a request answered 503 that counted (the stall test's paused Redis showed it).
  it("a resend with no room under maxInFlight waits for the command already sent: its caller gets that command's answer, never a 503 for a charge that counted", async () => {
    const inner = ioredisCall(redis);
    let sends = 0;
    // the second command is held 150 ms: past one timeout (100 ms), within the call's deadline (200 ms)
    const call: RedisCall = (command, args) => (++sends === 2 ? sleep(150).then(() => inner(command, args)) : inner(command, args));
    const store = new RedisStore({ redis: call, prefix: prefix(), maxInFlight: 1, timeoutMs: 100, retries: 1 });
    const budgets = [{ key: "b:wait", limit: 5, windowMs: 60_000 }];
    await store.charge({ id: "warm", now: T0, budgets, refused: false }); // learns Redis's clock: later sends carry a deadline
    await expect(store.charge({ id: "held", now: T0, budgets, refused: false })).resolves.toMatchObject({ kind: "charged", windows: [{ count: 2 }] });
    expect(sends, "no resend: there was no room").toBe(2);
    expect(await store.read(budgets, T0)).toEqual([{ count: 2, resetAt: T0 + 60_000 }]);
  });

  // From a review: the wait above covered only a resend refused for room. A resend that the client
  // rejected (a connection closing, a failover's READONLY) ended the call with a 503 at once, while
  // the first send was still out and charged when it ran.
  it("a resend that fails with an error while the first send is still out: the call waits for the first send and answers with it", async () => {
    const inner = ioredisCall(redis);
    let sends = 0;
    const call: RedisCall = (command, args) => {
      const n = ++sends;
      if (n === 2) return sleep(250).then(() => inner(command, args)); // the first send of the charge: held 250 ms
      if (n === 3) return sleep(10).then(() => Promise.reject(new Error("Connection is closed."))); // its resend fails fast
      return inner(command, args);
    };
    const store = new RedisStore({ redis: call, prefix: prefix(), timeoutMs: 100, retries: 2, maxInFlight: 10 });
    const budgets = [{ key: "b:failed-resend", limit: 5, windowMs: 60_000 }];
    await store.charge({ id: "warm", now: T0, budgets, refused: false });
    await expect(store.charge({ id: "held", now: T0, budgets, refused: false })).resolves.toMatchObject({ kind: "charged", windows: [{ count: 2 }] });
    await sleep(300);
    expect(await store.read(budgets, T0)).toEqual([{ count: 2, resetAt: T0 + 60_000 }]);
  });

  // From a review: a budget-spent answer was not remembered. With Redis's clock deciding, the late
  // first send ran after the window had rolled over and charged a request its caller was told was refused.
  it("clock redis: a budget-spent answer is remembered, so a late first send run after the window rolled over charges nothing (a lone charge, CHARGE_PLAIN; two in one turn, the batch)", async () => {
    for (const together of [1, 2]) {
      const inner = ioredisCall(redis);
      let sends = 0;
      // the first send after the fill is held 1.6 s: the resend (at the 1 s timeout) runs inside the
      // 1.5 s window, the held send after it ends, before the call's deadline (2 s)
      const call: RedisCall = (command, args) => (++sends === together + 1 ? sleep(1_600).then(() => inner(command, args)) : inner(command, args));
      const store = new RedisStore({ redis: call, prefix: prefix(), clock: "redis", timeoutMs: 1_000, retries: 1 });
      const budgets = (i: number) => [{ key: `b:spent-late:${i}`, limit: 1, windowMs: 1_500 }];
      const all = Array.from({ length: together }, (_, i) => i);
      for (const i of all) await store.charge({ id: `fill${i}`, now: T0, budgets: budgets(i), refused: false });
      const outcomes = await Promise.all(all.map((i) => store.charge({ id: `spent${i}`, now: T0, budgets: budgets(i), refused: false })));
      for (const outcome of outcomes) expect(outcome.kind, `${together} at once`).toBe("budget_spent");
      await sleep(800); // the held first send has run by now, in a new window by Redis's clock
      for (const i of all) expect((await store.read(budgets(i), T0))[0]!.count, `${together} at once, budget ${i}`).toBe(0);
    }
  });

  it("a batch past its deadline charges nothing: CHARGE_BATCH answers 'e' and leaves every count, plain and full charges alike; the same batch without a deadline charges each once", async () => {
    const p = prefix();
    const store = new RedisStore({ redis: ioredisCall(redis), prefix: p });
    const budgets = (i: number) => [{ key: `b:late-batch:${i}`, limit: 5, windowMs: 60_000 }];
    const cap = { name: "dispatch" as const, key: "d:late-batch", day: 1, limit: 5, resetAt: T0 + 86_400_000, offsetMs: 0 };
    const inputs = [0, 1, 2].map((i) => ({ clock: "h" as const, nonce: `late${i}`, memoTtlMs: 60_000, memo: "r:late-batch", now: T0, refused: false, budgets: budgets(i), idempotency: undefined, cap: i === 2 ? cap : undefined, key: (k: string) => `${p}${k}` }));
    const { keys, args } = batchCall(inputs); // charges 0 and 1 plain, 2 full (a cap)
    const send = (deadline: string) => ioredisCall(redis)("EVAL", [CHARGE_BATCH.source, String(keys.length), ...keys, deadline, ...args.slice(1)]) as Promise<unknown[]>;
    expect(String((await send("1"))[0]), "a deadline long past (Redis ms)").toBe("e");
    for (const i of [0, 1, 2]) expect(await store.read(budgets(i), T0)).toEqual([{ count: 0, resetAt: 0 }]);
    expect(String((await send(""))[0])).toBe("b");
    for (const i of [0, 1, 2]) expect(await store.read(budgets(i), T0)).toEqual([{ count: 1, resetAt: T0 + 60_000 }]);
  });

  it("a lone charge past its deadline charges nothing: CHARGE_PLAIN (plain) and CHARGE (a cap) answer 'e' and leave every count; the same calls without a deadline charge once", async () => {
    const p = prefix();
    const store = new RedisStore({ redis: ioredisCall(redis), prefix: p });
    const budgets = (i: number) => [{ key: `b:late-lone:${i}`, limit: 5, windowMs: 60_000 }];
    const cap = { name: "dispatch" as const, key: "d:late-lone", day: 1, limit: 5, resetAt: T0 + 86_400_000, offsetMs: 0 };
    const send = async (i: number, deadline: string) => {
      const input = { clock: "h" as const, nonce: `late-lone${i}.${deadline}`, memoTtlMs: 60_000, memo: "r:late-lone", now: T0, refused: false, budgets: budgets(i), idempotency: undefined, cap: i === 1 ? cap : undefined, key: (k: string) => `${p}${k}` };
      const { script, call, timed } = loneCharge(input);
      expect(script, `charge ${i}`).toBe(i === 1 ? CHARGE : CHARGE_PLAIN);
      const args = [...call.args];
      args[timed.deadlineArg] = deadline;
      return (await ioredisCall(redis)("EVAL", [script.source, String(call.keys.length), ...call.keys, ...args])) as unknown[];
    };
    for (const i of [0, 1]) expect(String((await send(i, "1"))[0]), "a deadline long past (Redis ms)").toBe("e");
    for (const i of [0, 1]) expect(await store.read(budgets(i), T0)).toEqual([{ count: 0, resetAt: 0 }]);
    for (const i of [0, 1]) expect(String((await send(i, ""))[0])).toBe(i === 1 ? "c" : "C");
    for (const i of [0, 1]) expect(await store.read(budgets(i), T0)).toEqual([{ count: 1, resetAt: T0 + 60_000 }]);
  });

  it("batch must be a whole number from 1 to 1000 (PolicyConfigError naming batch)", () => {
    for (const batch of [0, 1.5, 1_001, Number.NaN, "8" as unknown as number]) {
      expect(() => new RedisStore({ redis: ioredisCall(redis), batch }), String(batch)).toThrow(PolicyConfigError);
      expect(() => new RedisStore({ redis: ioredisCall(redis), batch }), String(batch)).toThrow(/batch/);
    }
    expect(() => new RedisStore({ redis: ioredisCall(redis), batch: 1 })).not.toThrow();
  });
});

describe("a reply's parts as clients hand them over", () => {
  // ioredis and node-redis hand integer replies over as numbers, bulk strings as strings, and a
  // buffer-mode call (ioredis callBuffer) everything as Buffers: each is read alike. The parts are
  // no longer written out as text first (a seventh of the host's time per charge).
  const asText = (reply: unknown[]) => reply.map(String);
  const asBuffers = (reply: unknown[]) => reply.map((part) => Buffer.from(String(part)));
  const replies: unknown[][] = [
    ["c", 1_795_803_000_000_123, "", 1, "m7", 3, 1_795_803_060_000, 1, 1_795_803_060_000],
    ["c", 1_795_803_000_000_123, 1_795_803_000_000, 0, "", 3, 1_795_803_060_000.5],
    ["x", 12, "", "POST /articles/a_1/send 0123456789abcdef0123456789abcdef", "", 1, 60_000],
    ["r", 12, "", 25, "", 4, 60_000],
    ["S", 12, "", 600, 60_000, 60, 60_000],
    ["C", 12, "", 2, 60_000, 2, 60_000],
  ];
  it.each(replies.map((r) => [r[0], r] as const))("a charge reply of kind %s decodes the same from numbers, text and Buffers", (_kind, reply) => {
    const expected = decodeCharge(asText(reply));
    expect(decodeCharge(reply)).toEqual(expected);
    expect(decodeCharge(asBuffers(reply))).toEqual(expected);
  });

  it("a batch's reply too", () => {
    const batch = ["b", 12, "C", 12, "", 2, 60_000, 2, 60_000, "!", "WRONGTYPE Operation against a key holding the wrong kind of value", "c", 12, "", 1, "m9", 1, 60_000];
    const shape = (outcomes: (ChargeOutcome | Error)[]) => outcomes.map((o) => (o instanceof Error ? o.message : o));
    const expected = shape(decodeBatch(asText(batch), [2, 1, 1]));
    expect(shape(decodeBatch(batch, [2, 1, 1]))).toEqual(expected);
    expect(shape(decodeBatch(asBuffers(batch), [2, 1, 1]))).toEqual(expected);
    expect(expected[1]).toContain("WRONGTYPE");
  });
});
