import { afterAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createPolicy, MemoryStore, type Decision } from "../../src/index.js";
import { RedisStore, RedisTimeoutError, type RedisCall } from "../../src/redis/index.js";
import { T0, get, key, post } from "../fixtures.js";
import { Link } from "../../src/redis/client.js";
import { CHARGE } from "../../src/redis/scripts/charge.js";
import { RESET } from "../../src/redis/scripts/reset.js";
import { cleanUp, counting, ioredis, ioredisCall, lateFirstSend, lateReply, uniquePrefix } from "./helpers.js";

const redis = ioredis();
const root = uniquePrefix("failure");
let run = 0;
const prefix = () => `${root}${++run}:`;
const owner = key({ nl_1: { content: "write", audience: "write", sending: "write" } }, true);
const who = { credential: owner, roles: { nl_1: "owner" } };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

afterAll(async () => {
  await cleanUp(redis, root);
  redis.disconnect();
});

describe("DESIGN §12 store failure: a Redis error or timeout answers 503 service_unavailable, or fails open", () => {
  const broken: RedisCall = () => Promise.reject(new Error("ECONNREFUSED 127.0.0.1:6379"));
  const hanging: RedisCall = () => new Promise(() => {});

  it("a Redis error makes charge reject, and createPolicy answers 503 service_unavailable with the four RateLimit-* headers", async () => {
    const store = new RedisStore({ redis: broken, prefix: prefix() });
    await expect(store.charge({ id: "x", now: T0, budgets: [], refused: false })).rejects.toThrow("ECONNREFUSED");
    const errors: unknown[] = [];
    const policy = createPolicy({ store, clock: () => T0, onStoreError: (e) => errors.push(e) });
    const d = await policy.check(get("/newsletters/nl_1/subscribers"), who);
    expect(d.status).toBe(503);
    expect(d.allowed).toBe(false);
    expect(d.body?.error.code).toBe("service_unavailable");
    expect(d.headers).toEqual({ "RateLimit-Policy": '"general";q=600;w=60, "audience";q=60;w=60', "RateLimit-Limit": "600", "RateLimit-Remaining": "0", "RateLimit-Reset": "1" });
    expect(d.reason).toMatchObject({ rule: "store_unavailable", failOpen: false });
    expect(errors).toHaveLength(1);
  });

  it("DESIGN §12 a reply that does not add up (['x', 'y'], a charge with unreadable windows) is a store failure: 503 with the headers (found by a black-box review)", async () => {
    for (const reply of [["x", "y"], ["C", 1, 2, "a", "b"], ["c", 1, "", "0", ""]]) {
      const store = new RedisStore({ redis: () => Promise.resolve(reply), prefix: prefix() });
      const d = await createPolicy({ store, clock: () => T0 }).check(get("/newsletters/nl_1/subscribers"), who);
      expect(d, JSON.stringify(reply)).toMatchObject({ status: 503, allowed: false, reason: { rule: "store_unavailable" } });
      for (const value of Object.values(d.headers)) expect(value).not.toMatch(/NaN/);
    }
  });

  it("failOpen: true lets the request through uncounted, and the reason says so", async () => {
    const policy = createPolicy({ store: new RedisStore({ redis: broken, prefix: prefix() }), clock: () => T0, failOpen: true });
    const d = await policy.check(get("/newsletters/nl_1/subscribers"), who);
    expect(d).toMatchObject({ allowed: true, status: 200, charged: { budgets: [], caps: [] }, reason: { rule: "store_unavailable", failOpen: true } });
  });

  it("a Redis that does not answer within timeoutMs is a RedisTimeoutError: 503 after the retries", async () => {
    const call = counting(hanging);
    const errors: unknown[] = [];
    const store = new RedisStore({ redis: call, prefix: prefix(), timeoutMs: 20, retries: 2 });
    const policy = createPolicy({ store, clock: () => T0, onStoreError: (e) => errors.push(e) });
    const d = await policy.check(get("/me"), who);
    expect(d.status).toBe(503);
    expect(errors[0]).toBeInstanceOf(RedisTimeoutError);
    expect(call.calls).toBe(3);
    await expect(store.release({ cap: "dispatch", key: "d:4.nl_1", day: 1, member: "m1" }, T0)).rejects.toBeInstanceOf(RedisTimeoutError);
    await expect(store.read([{ key: "b", limit: 1, windowMs: 1000 }], T0)).rejects.toBeInstanceOf(RedisTimeoutError);
  });

  // From a review: the call gave up when its last timer fired, and Node's timers can fire up to a
  // millisecond early by the monotonic clock: a send whose deadline had not passed could still run
  // and charge after its caller was answered 503.
  it("a call never gives up before timeoutMs × (retries + 1) by the monotonic clock, however early a timer fires (200 calls against a Redis that never answers)", async () => {
    const link = new Link(hanging, 20, 1, 1_000);
    const early: number[] = [];
    await Promise.all(
      Array.from({ length: 200 }, async () => {
        const t0 = performance.now();
        await expect(link.run(CHARGE, "charge", [], [])).rejects.toBeInstanceOf(RedisTimeoutError);
        const waited = performance.now() - t0;
        if (waited < 40) early.push(waited);
      }),
    );
    expect(early).toEqual([]);
  });

  it("an error reply is not retried (it would only repeat itself)", async () => {
    const call = counting(broken);
    await expect(new RedisStore({ redis: call, prefix: prefix(), retries: 3 }).read([{ key: "b", limit: 1, windowMs: 1000 }], T0)).rejects.toThrow();
    expect(call.calls).toBe(1);
  });

  it("a real client whose Redis is down: ioredis queues the command, the store times out, 503", async () => {
    const down = new Redis({ port: 1, host: "127.0.0.1", lazyConnect: true, maxRetriesPerRequest: null, retryStrategy: () => 50 });
    down.on("error", () => {});
    try {
      const policy = createPolicy({ store: new RedisStore({ redis: ioredisCall(down), prefix: prefix(), timeoutMs: 50, retries: 0 }), clock: () => T0 });
      const d = await policy.check(get("/me"), who);
      expect(d.status).toBe(503);
      expect(d.reason).toMatchObject({ rule: "store_unavailable" });
    } finally {
      down.disconnect();
    }
  });

  it("a real client that fails fast (no offline queue): 503 at once", async () => {
    const down = new Redis({ port: 1, host: "127.0.0.1", lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    down.on("error", () => {});
    try {
      const policy = createPolicy({ store: new RedisStore({ redis: ioredisCall(down), prefix: prefix() }), clock: () => T0 });
      expect((await policy.check(get("/me"), who)).status).toBe(503);
    } finally {
      down.disconnect();
    }
  });
});

describe("spec §8 daily caps, DESIGN §12: a cap charge Redis ran in time, its reply read after the store gave up (503), is released: its retry is counted and run, not a replay of a send never made", () => {
  it.each([
    ["a send (dispatch cap)", "/articles/a_1/send", "dispatch"],
    ["a test send (test-send cap)", "/articles/a_1/test-send", "testSend"],
  ])("%s (found by a multi-process drill: the 503'd send kept its place of the day's cap, and its retry was answered as a replay)", async (_name, path, cap) => {
    const call = lateReply(ioredisCall(redis));
    const store = new RedisStore({ redis: call, prefix: prefix(), timeoutMs: 100, retries: 0 });
    const policy = createPolicy({ store, clock: () => T0, config: { caps: { dispatch: { limit: 3 }, testSend: { limit: 3 } } } });
    const send = (k: string) => policy.check(post(path, { newsletter: "nl_1", idempotencyKey: k, body: { to: ["a@example.com"] } }), who);
    // a first one: the store learns Redis's clock, and the script is cached; then a reply comes 400 ms late
    expect((await send("k0")).status).toBe(200);
    call.arm(400);
    const lost = await send("k1");
    expect([lost.status, lost.reason.rule]).toEqual([503, "store_unavailable"]);
    await call.delivered;
    await sleep(100);
    // the retry runs and counts (not a replay); the lost charge holds no place: three fit the cap of 3
    const retry = await send("k1");
    expect([retry.status, retry.reason, retry.charged.caps]).toEqual([200, { rule: "allowed" }, [cap]]);
    expect((await send("k2")).status).toBe(200);
    expect((await send("k3")).reason.rule).toBe("daily_cap");
  });
});

describe("DESIGN §7, §12: a keyed write without a cap that Redis ran in time, its reply read after the store gave up (503), has its record forgotten (FORGET): its retry runs, not a replay of a write never made", () => {
  it.each([["host"], ["redis"]] as const)("on one primary, clock: %s, as on MemoryStore (it was left recorded: the retry answered as a replay)", async (clock) => {
    const call = lateReply(ioredisCall(redis));
    const store = new RedisStore({ redis: call, prefix: prefix(), timeoutMs: 100, retries: 0, clock });
    const policy = createPolicy({ store, clock: () => T0 });
    const write = (k: string) => policy.check(post("/newsletters/nl_1/articles", { idempotencyKey: k, body: { title: "t" } }), who);
    expect((await write("w0")).status).toBe(200);
    call.arm(400);
    const lost = await write("w1");
    expect([lost.status, lost.reason.rule]).toEqual([503, "store_unavailable"]);
    await call.delivered;
    await sleep(100);
    const retry = await write("w1");
    expect([retry.status, retry.reason]).toEqual([200, { rule: "allowed" }]);
    expect((await write("w1")).reason).toEqual({ rule: "allowed", replay: true });
  });

  it("two keyed writes of one turn, one batch whose reply is read after the store gave up: both records forgotten, both retries run", async () => {
    const call = lateReply(ioredisCall(redis));
    const store = new RedisStore({ redis: call, prefix: prefix(), timeoutMs: 100, retries: 0 });
    const policy = createPolicy({ store, clock: () => T0 });
    const write = (k: string) => policy.check(post("/newsletters/nl_1/articles", { idempotencyKey: k, body: { title: "t" } }), who);
    expect((await Promise.all([write("w0"), write("w00")])).map((d) => d.status)).toEqual([200, 200]);
    call.arm(400);
    expect((await Promise.all([write("w1"), write("w2")])).map((d) => d.status)).toEqual([503, 503]);
    await call.delivered;
    await sleep(100);
    const retries = await Promise.all([write("w1"), write("w2")]);
    expect(retries.map((d) => [d.status, d.reason])).toEqual([[200, { rule: "allowed" }], [200, { rule: "allowed" }]]);
  });

  it("RedisStore.forget forgets only the record that charge wrote (another fingerprint, another end: kept), and its index entry with it", async () => {
    const at = prefix();
    const store = new RedisStore({ redis: ioredisCall(redis), prefix: at });
    const budgets = [{ key: "b:5.key_1:general", limit: 10, windowMs: 60_000 }];
    const idempotency = { key: "k:5.key_1:w1", fingerprint: "f1", ttlMs: 86_400_000, scope: "k:5.key_1" };
    await store.charge({ id: "r1", now: T0, budgets, refused: false, idempotency });
    const ends = T0 + 86_400_000;
    expect(await store.forget({ key: idempotency.key, fingerprint: "f2", expiresAt: ends, scope: idempotency.scope }, T0)).toBe(false);
    expect(await store.forget({ key: idempotency.key, fingerprint: "f1", expiresAt: ends + 5, scope: idempotency.scope }, T0)).toBe(false);
    expect(await redis.zcard(`${at}x:k:5.key_1`)).toBe(1);
    expect(await store.forget({ key: idempotency.key, fingerprint: "f1", expiresAt: ends, scope: idempotency.scope }, T0)).toBe(true);
    expect(await redis.exists(`${at}${idempotency.key}`)).toBe(0);
    expect(await redis.zcard(`${at}x:k:5.key_1`)).toBe(0);
    // the next charge under the key runs again, not a replay
    expect(await store.charge({ id: "r2", now: T0 + 1, budgets, refused: false, idempotency })).toMatchObject({ kind: "charged", replay: false });
  });
});

describe("DESIGN §12: with failOpen or insurance, a late cap charge stays counted: the send may have gone out (found by a review: the late release uncounted sends that were let through)", () => {
  it.each([
    ["failOpen: true", { failOpen: true }],
    ["insurance", { insurance: { store: new MemoryStore(), share: 1 } }],
  ])("%s", async (_name, options) => {
    const call = lateReply(ioredisCall(redis));
    const store = new RedisStore({ redis: call, prefix: prefix(), timeoutMs: 100, retries: 0 });
    const policy = createPolicy({ store, clock: () => T0, config: { caps: { dispatch: { limit: 3 } } }, ...options });
    // without a key: the insurance store answers keyed sends 503 (docs/operating.md)
    const send = (_k: string) => policy.check(post("/articles/a_1/send", { newsletter: "nl_1" }), who);
    expect((await send("k0")).status).toBe(200);
    call.arm(400);
    // let through by the policy (uncounted, or by the insurance store): Redis's late count stands
    const through = await send("k1");
    expect(through.allowed).toBe(true);
    await call.delivered;
    await sleep(100);
    expect((await send("k2")).status).toBe(200);
    expect((await send("k3")).reason.rule).toBe("daily_cap");
  });
});

describe("the same for charges sent together (CHARGE_BATCH)", () => {
  it("two sends of one turn, one batch whose reply is read after the store gave up: both released, both retries counted", async () => {
    const call = lateReply(ioredisCall(redis));
    const store = new RedisStore({ redis: call, prefix: prefix(), timeoutMs: 100, retries: 0 });
    const policy = createPolicy({ store, clock: () => T0, config: { caps: { dispatch: { limit: 4 } } } });
    const send = (k: string) => policy.check(post("/articles/a_1/send", { newsletter: "nl_1", idempotencyKey: k }), who);
    // the store learns Redis's clock, and the batch script is cached
    expect((await Promise.all([send("w1"), send("w2")])).map((d) => d.status)).toEqual([200, 200]);
    call.arm(400);
    expect((await Promise.all([send("k1"), send("k2")])).map((d) => d.status)).toEqual([503, 503]);
    await call.delivered;
    await sleep(100);
    const retries = await Promise.all([send("k1"), send("k2")]);
    expect(retries.map((d) => [d.status, d.reason])).toEqual([[200, { rule: "allowed" }], [200, { rule: "allowed" }]]);
    expect((await send("k3")).reason.rule).toBe("daily_cap");
  });
});

describe("nothing is counted twice when a call times out and is retried with the same request id", () => {
  const budgets = [{ key: "b:5.key_1:general", limit: 10, windowMs: 60_000 }];

  it("the reply is late: Redis charged, the store timed out and retried, the retry is answered from the remembered outcome", async () => {
    const real = ioredisCall(redis);
    let first = true;
    const slowReply: RedisCall = async (command, args) => {
      const reply = await real(command, args);
      if (first) {
        first = false;
        await sleep(2_000);
      }
      return reply;
    };
    const store = new RedisStore({ redis: slowReply, prefix: prefix(), timeoutMs: 1_000, retries: 1 });
    const o = await store.charge({ id: "req_late", now: T0, budgets, refused: false });
    expect(o).toMatchObject({ kind: "charged", windows: [{ count: 1 }] });
    expect(await store.read(budgets, T0)).toEqual([{ count: 1, resetAt: T0 + 60_000 }]);
  });

  it("the command is late: the retry charges first, the late original is answered from the remembered outcome (a charge of budgets only, and one with a cap)", async () => {
    const cap = { name: "dispatch" as const, key: "d:4.nl_late", day: 1, limit: 5, resetAt: T0 + 1_000, offsetMs: 0 };
    for (const [path, extra] of [["plain", {}], ["cap", { cap }]] as const) {
      const slowSend = lateFirstSend(ioredisCall(redis), 1_500);
      const store = new RedisStore({ redis: slowSend, prefix: prefix(), timeoutMs: 1_000, retries: 1 });
      const sendRequest = { id: "req_slow", now: T0, budgets, refused: false, ...extra };
      expect(await store.charge(sendRequest), path).toMatchObject({ kind: "charged", windows: [{ count: 1 }] });
      // the original now runs too, and is answered from the remembered outcome
      const late = (await slowSend.original()) as unknown[];
      // a plain charge answers CHARGE_PLAIN's { C, time, now, count, resetAt }; one with a cap CHARGE's { c, time, now, replay, member, count, resetAt }
      if (path === "plain") expect([late[0], ...late.slice(2, 4)].map(String), path).toEqual(["C", "", "1"]);
      else expect([late[0], ...late.slice(2, 6)].map(String), path).toEqual(["c", "", "0", "m1", "1"]);
      expect(await store.read(budgets, T0), path).toEqual([{ count: 1, resetAt: T0 + 60_000 }]);
    }
  });

  it("the host sending the same ChargeRequest twice makes two requests, as MemoryStore counts them: only the store's own retry is remembered", async () => {
    const store = new RedisStore({ redis: ioredisCall(redis), prefix: prefix() });
    const request = { id: "req_same", now: T0, budgets, refused: false, cap: { name: "dispatch" as const, key: "d:4.nl_1", day: 1, limit: 1, resetAt: T0 + 1000, offsetMs: 0 } };
    expect(await store.charge(request)).toMatchObject({ kind: "charged", member: "m1" });
    expect(await store.charge(request)).toMatchObject({ kind: "cap_reached", count: 1 });
    expect(await store.read(budgets, T0)).toEqual([{ count: 2, resetAt: T0 + 60_000 }]);
  });

  // Regression (Redis audit): outcomes were remembered by request id, and a client that sent one
  // X-Request-Id on many requests in one millisecond had them all answered from the first charge,
  // past the budget and the daily cap.
  it("a request id reused by other requests (a client's X-Request-Id), even in the same millisecond and in parallel, is charged each time", async () => {
    const store = new RedisStore({ redis: ioredisCall(redis), prefix: prefix() });
    const policy = createPolicy({ store, clock: () => T0, config: { budgets: { audience: { limit: 5, window: 60 } }, caps: { dispatch: { limit: 2 } } } });
    const list = get("/newsletters/nl_1/subscribers", { requestId: "req_from_a_client_header" });
    const reads = await Promise.all(Array.from({ length: 50 }, () => policy.check(list, who)));
    expect(reads.filter((d) => d.allowed)).toHaveLength(5);
    const send = post("/articles/a_1/send", { newsletter: "nl_1", requestId: "req_from_a_client_header" });
    const sends = await Promise.all(Array.from({ length: 20 }, () => policy.check(send, who)));
    expect(sends.filter((d) => d.allowed)).toHaveLength(2);
  });

  it("with retries: 0 nothing is remembered: no memo key is written", async () => {
    const p = prefix();
    const store = new RedisStore({ redis: ioredisCall(redis), prefix: p, retries: 0 });
    await store.charge({ id: "req_no_memo", now: T0, budgets, refused: false });
    expect(await redis.keys(`${p}r:*`)).toEqual([]);
    const remembering = new RedisStore({ redis: ioredisCall(redis), prefix: p, dedupeMs: 5_000 });
    await remembering.charge({ id: "req_memo", now: T0, budgets, refused: false });
    await remembering.charge({ id: "req_memo_2", now: T0 + 1, budgets, refused: false });
    const memos = await redis.keys(`${p}r:*`);
    expect(memos).toHaveLength(1); // one hash per store and slot, a field per call (and '_': its lifetime is set)
    expect((await redis.hkeys(memos[0]!)).sort()).toEqual(["1", "2", "_"]);
    expect(await redis.pttl(memos[0]!)).toBeLessThanOrEqual(10_000);
  });

  it("every memo hash has a lifetime: CHARGE_PLAIN sets it only on a hash without the field that says so, and sets it again on one deleted or made by another script (a leak of a hash per slot otherwise)", async () => {
    const p = prefix();
    const store = new RedisStore({ redis: ioredisCall(redis), prefix: p, dedupeMs: 5_000 });
    const memoOf = async () => (await redis.keys(`${p}r:*`))[0]!;
    await store.charge({ id: "r1", now: T0, budgets, refused: false });
    const memo = await memoOf();
    const ttl = async () => redis.pttl(memo);
    expect(await ttl()).toBeGreaterThan(0);
    // deleted within its slot (an operator's DEL, a FLUSHALL): the next charge makes it anew, with a lifetime
    await redis.del(memo);
    await store.charge({ id: "r2", now: T0 + 1, budgets, refused: false });
    expect(await ttl()).toBeGreaterThan(0);
    // made by another script (the full CHARGE, a batch) with its lifetime but without the field: a
    // plain charge after it adds the field and keeps the lifetime
    await redis.del(memo);
    await store.charge({ id: "r3", now: T0 + 2, budgets, refused: false, idempotency: { key: "k:1", fingerprint: "f", ttlMs: 60_000 } });
    expect([await redis.exists(memo), await redis.hexists(memo, "_")]).toEqual([1, 0]);
    await store.charge({ id: "r4", now: T0 + 3, budgets, refused: false });
    expect(await redis.hexists(memo, "_")).toBe(1);
    expect(await ttl()).toBeGreaterThan(0);
  });
});

describe("SCRIPT FLUSH (or a Redis restart) mid-test does not fail requests: EVALSHA falls back to EVAL", () => {
  it("every request after a flush is decided, and the script is cached again", async () => {
    const call = counting(ioredisCall(redis));
    const policy = createPolicy({ store: new RedisStore({ redis: call, prefix: prefix() }), clock: () => T0, config: { budgets: { general: { limit: 5, window: 60 } } } });
    const decisions: Decision[] = [];
    for (let i = 0; i < 8; i++) {
      if (i === 2 || i === 5) await redis.script("FLUSH");
      decisions.push(await policy.check(get("/me"), who));
    }
    expect(decisions.map((d) => d.status)).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    expect(call.commands.at(-1)).toBe("EVALSHA");
  });

  it("a NOSCRIPT reply is answered by one EVAL with the same keys and arguments, through the real Redis", async () => {
    const real = ioredisCall(redis);
    const seen: string[] = [];
    const noScriptOnce: RedisCall = async (command, args) => {
      seen.push(command);
      if (command === "EVALSHA" && seen.length === 1) throw new Error("NOSCRIPT No matching script. Please use EVAL.");
      return real(command, args);
    };
    const store = new RedisStore({ redis: noScriptOnce, prefix: prefix() });
    const budgets = [{ key: "b:1.k:general", limit: 3, windowMs: 60_000 }];
    expect(await store.charge({ id: "req_ns", now: T0, budgets, refused: false })).toMatchObject({ kind: "charged", windows: [{ count: 1 }] });
    expect(seen).toEqual(["EVALSHA", "EVAL"]);
    expect(await store.read(budgets, T0)).toEqual([{ count: 1, resetAt: T0 + 60_000 }]);
  });
});

describe("policy.reset over Redis: the store's retry of a reset clears nothing a second time", () => {
  it("spec §8, DESIGN §7: a reset whose reply comes late is resent, and the resend keeps what others counted since (found by a Redis review: 75 sends in a day for a cap of 25)", async () => {
    const shared = prefix();
    const config = { docsUrl: "https://docs.example/errors", caps: { dispatch: { limit: 2 } } };
    const send = (i: number) => post(`/articles/a_${i}/send`, { newsletter: "nl_1" });
    const direct = ioredisCall(redis);
    // the operator's process: every RESET reply reaches it 700 ms late (its event loop was busy), past the 500 ms timeout
    const seen: string[] = [];
    const late: RedisCall = async (command, args) => {
      const reply = await direct(command, args);
      const isReset = args[0] === RESET.sha || args[0] === RESET.source;
      if (isReset) seen.push(command);
      return isReset ? sleep(700).then(() => reply) : reply;
    };
    const operator = createPolicy({ store: new RedisStore({ redis: late, prefix: shared }), config, clock: () => T0 });
    const server = createPolicy({ store: new RedisStore({ redis: direct, prefix: shared }), config, clock: () => T0 });
    for (let i = 0; i < 2; i++) expect((await server.check(send(i), who)).status).toBe(200);
    expect((await server.check(send(2), who)).status).toBe(429);
    const reset = operator.reset({ newsletter: "nl_1" });
    await sleep(100);
    // another process sends as soon as the cap was cleared: two admitted, the third refused
    const after = [];
    for (let i = 3; i < 6; i++) after.push((await server.check(send(i), who)).status);
    expect(after).toEqual([200, 200, 429]);
    await reset;
    expect(seen.length, "the store resent the reset after its timeout").toBeGreaterThan(1);
    // the resend cleared nothing: the cap is still spent
    expect((await server.check(send(9), who)).status).toBe(429);
  });
});
