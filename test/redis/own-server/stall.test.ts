/**
 * Issue 8, defect 3 — "A Redis stall queues without bound and charges late": with Redis paused under
 * load, commands piled up in the client without bound, and on resume every queued command ran and
 * charged the credential's budget for requests that had all been answered 503. These tests pause
 * (SIGSTOP) and kill a redis-server of our own (ports 6380–6381), with ioredis at its defaults
 * (offline queue on, no commandTimeout, resend after reconnect): the worst client set-up.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createPolicy, type Decision } from "../../../src/index.js";
import { Link } from "../../../src/redis/client.js";
import { CHARGE, CHARGE_TIMED } from "../../../src/redis/scripts/charge.js";
import { RedisOverloadError, RedisStore, RedisTimeoutError, type RedisCall } from "../../../src/redis/index.js";
import { T0, get, key, post } from "../../fixtures.js";
import { ioredisCall } from "../helpers.js";
import { OwnRedis } from "../server.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const owner = key({ nl_1: { sending: "write" } }, true, "key_stall");
const who = { credential: owner, roles: { nl_1: "owner" } };
const config = { budgets: { general: { limit: 100_000, window: 3_600 }, write: { limit: 100_000, window: 3_600 } }, caps: { dispatch: { limit: 10_000 } } };

async function settled(store: RedisStore, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (store.inFlight > 0) {
    if (Date.now() > until) throw new Error(`${store.inFlight} commands still in flight`);
    await sleep(20);
  }
}

describe("issue 8 defect 3: a paused Redis (SIGSTOP) — pending calls bounded, and nothing charged by commands that ran after their caller got 503", () => {
  const server = new OwnRedis(6380);
  let redis: Redis;

  beforeAll(async () => {
    await server.start();
    redis = new Redis({ port: server.port, host: "127.0.0.1" });
  });
  afterAll(async () => {
    redis?.disconnect();
    await server.stop();
  });

  it("2 000 requests against a paused Redis: never more than maxInFlight commands pending, every request 503 (most at once, RedisOverloadError), and after resume the budget and the daily cap count only the requests answered before the pause", async () => {
    const store = new RedisStore({ redis: ioredisCall(redis), prefix: "stall:1:", timeoutMs: 150, retries: 1, maxInFlight: 64 });
    const errors: unknown[] = [];
    const policy = createPolicy({ store, config, onStoreError: (e) => errors.push(e) });
    // before the pause: 3 reads and 2 sends, answered (the store also learns Redis's clock here)
    for (let i = 0; i < 3; i++) expect((await policy.check(get("/me"), who)).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await policy.check(post(`/articles/a_${i}/send`, { newsletter: "nl_1" }), who)).status).toBe(200);

    server.pause();
    let maxPending = 0;
    const decisions: Decision[] = [];
    try {
      const watch = setInterval(() => (maxPending = Math.max(maxPending, store.inFlight)), 1);
      for (let batch = 0; batch < 20; batch++) {
        const fired = Array.from({ length: 100 }, (_, i) =>
          policy.check(i % 4 === 0 ? post(`/articles/b_${batch}_${i}/send`, { newsletter: "nl_1" }) : get("/me"), who),
        );
        maxPending = Math.max(maxPending, store.inFlight);
        decisions.push(...(await Promise.all(fired)));
      }
      clearInterval(watch);
    } finally {
      server.resume();
    }
    const overloads = errors.filter((e) => e instanceof RedisOverloadError).length;
    const timeouts = errors.filter((e) => e instanceof RedisTimeoutError).length;
    console.log(`paused: ${decisions.length} requests, ${decisions.filter((d) => d.status === 503).length} answered 503 (onStoreError: ${overloads} RedisOverloadError, ${timeouts} RedisTimeoutError), at most ${maxPending} commands pending (maxInFlight 64)`);
    expect(decisions.every((d) => d.status === 503)).toBe(true);
    expect(maxPending).toBeLessThanOrEqual(64);
    expect(overloads).toBeGreaterThan(1_000);

    // Redis runs the queued commands now: each is past its deadline and charges nothing
    await settled(store);
    const status = await policy.status(owner);
    expect(status.budgets.general).toMatchObject({ limit: 100_000, remaining: 100_000 - 5 });
    expect(status.budgets.write).toMatchObject({ remaining: 100_000 - 2 });
    const caps = await redis.keys("stall:1:d:*");
    const day = caps.find((k) => !k.endsWith(":day"))!;
    expect(await redis.scard(day)).toBe(2);
    // and the store works again
    expect((await policy.check(get("/me"), who)).status).toBe(200);
  });

  it("a charge held up past its deadline (timeoutMs × (retries + 1)) charges nothing when Redis finally runs it, with the store's retry in the queue too", async () => {
    const store = new RedisStore({ redis: ioredisCall(redis), prefix: "stall:2:", timeoutMs: 200, retries: 1 });
    const budgets = [{ key: "b:1.k:general", limit: 5, windowMs: 3_600_000 }];
    expect(await store.charge({ id: "warm", now: T0, budgets, refused: false })).toMatchObject({ kind: "charged", windows: [{ count: 1 }] });
    server.pause();
    try {
      await expect(store.charge({ id: "late", now: T0, budgets, refused: false })).rejects.toBeInstanceOf(RedisTimeoutError);
      expect(store.inFlight).toBe(2); // the original and the retry, both still queued
      await sleep(300);
    } finally {
      server.resume();
    }
    await settled(store);
    expect(await store.read(budgets, T0)).toEqual([{ count: 1, resetAt: T0 + 3_600_000 }]);
  });

  it("a reset held up past its deadline clears nothing when Redis finally runs it: the caller was told it failed, and the counts stay (a reset rejected during a pause cleared a spent budget and a day's sends on resume; found by a Redis drill)", async () => {
    const store = new RedisStore({ redis: ioredisCall(redis), prefix: "stall:reset:", timeoutMs: 200, retries: 1 });
    let now = T0;
    const policy = createPolicy({ store, clock: () => now, config: { budgets: { audience: { limit: 2, window: 3_600 } }, caps: { dispatch: { limit: 3 } } } });
    const reader = key({ nl_1: { audience: "read", sending: "write" } }, false, "key_reset_stall");
    const as = { credential: reader, roles: { nl_1: "owner" } };
    for (let i = 0; i < 2; i++) expect((await policy.check(get("/newsletters/nl_1/subscribers"), as)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await policy.check(post(`/articles/r_${i}/send`, { newsletter: "nl_1" }), as)).status).toBe(200);
    server.pause();
    try {
      await expect(policy.reset({ newsletter: "nl_1" })).rejects.toBeInstanceOf(RedisTimeoutError);
      await expect(policy.reset({ credential: reader })).rejects.toBeInstanceOf(RedisTimeoutError);
      await sleep(300);
    } finally {
      server.resume();
    }
    await settled(store);
    now += 1;
    expect((await policy.check(get("/newsletters/nl_1/subscribers"), as)).status).toBe(429);
    expect((await policy.check(post("/articles/r_9/send", { newsletter: "nl_1" }), as)).reason.rule).toBe("daily_cap");
    // a reset that answers clears as before
    await policy.reset({ credential: reader });
    await policy.reset({ newsletter: "nl_1" });
    expect((await policy.check(get("/newsletters/nl_1/subscribers"), as)).status).toBe(200);
    expect((await policy.check(post("/articles/r_10/send", { newsletter: "nl_1" }), as)).status).toBe(200);
  });

  it("with a client that has no offline queue and fails fast, the same bound and deadline hold (ioredis enableOfflineQueue: false, maxRetriesPerRequest: 1)", async () => {
    const strict = new Redis({ port: server.port, host: "127.0.0.1", enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    await new Promise((resolve) => strict.once("ready", resolve));
    try {
      const store = new RedisStore({ redis: ioredisCall(strict), prefix: "stall:3:", timeoutMs: 100, retries: 0, maxInFlight: 10 });
      const policy = createPolicy({ store, config });
      for (let i = 0; i < 5; i++) expect((await policy.check(get("/me"), who)).status).toBe(200);
      server.pause();
      let decisions: Decision[] = [];
      try {
        decisions = await Promise.all(Array.from({ length: 200 }, () => policy.check(get("/me"), who)));
        expect(store.inFlight).toBeLessThanOrEqual(10);
        // the deadline is never later than the give-up moment (the offset is a lower bound): a
        // command that Redis runs at any time after the callers were answered 503 counts nothing
        await sleep(50);
      } finally {
        server.resume();
      }
      expect(decisions.every((d) => d.status === 503)).toBe(true);
      await settled(store);
      expect((await policy.status(owner)).budgets.general?.remaining).toBe(100_000 - 5);
    } finally {
      strict.disconnect();
    }
  });
});

describe("issue 8 defect 3: the deadline is safe against clock skew between the host and Redis", () => {
  const server = new OwnRedis(6381);
  let redis: Redis;

  beforeAll(async () => {
    await server.start();
    redis = new Redis({ port: server.port, host: "127.0.0.1" });
  });
  afterAll(async () => {
    redis?.disconnect();
    await server.stop();
  });

  const budgets = [{ key: "b:1.k:general", limit: 100, windowMs: 3_600_000 }];
  function chargeArgs(prefix: string): { keys: string[]; args: string[] } {
    const keys = [`${prefix}seq`, `${prefix}r`, `${prefix}${budgets[0]!.key}`];
    const args = ["h", String(T0), "n1", "0", "1", "0", "", "", "", "", "", "0", "0", "0", "0", "", "100", "3600000"];
    return { keys, args };
  }
  // CHARGE's own: the deadline is ARGV 16, the reply's Redis time is in µs
  const timed = CHARGE_TIMED;

  it("the host's clock an hour off (wall or monotonic) changes nothing: the offset is learned from Redis's replies", async () => {
    for (const shift of [-3_600_000, 3_600_000, 1e9]) {
      const link = new Link(ioredisCall(redis), 500, 1, 100, () => performance.now() + shift);
      const { keys, args } = chargeArgs(`skew:${shift}:`);
      for (let i = 0; i < 3; i++) expect(((await link.run(CHARGE, "charge", keys, args, timed)) as string[])[0]).toBe("c");
      expect(link.offset).toBeDefined();
    }
  });

  it("Redis's clock stepping forward an hour after the offset was learned (every deadline an hour early): the first charge comes back expired, the store re-learns the offset and charges once; the next charges pass at once", async () => {
    let shift = 0;
    const sent: string[] = [];
    const call = ioredisCall(redis);
    const link = new Link((c, a) => (sent.push(c), call(c, a)), 500, 1, 100, () => performance.now() + shift);
    const { keys, args } = chargeArgs("skew:forward:");
    expect(((await link.run(CHARGE, "charge", keys, args, timed)) as string[])[0]).toBe("c");
    shift = -3_600_000; // the host's monotonic clock "goes back" an hour: to the store, Redis's clock jumped forward
    const reply = (await link.run(CHARGE, "charge", keys, args, timed)) as string[];
    expect(reply[0]).toBe("c");
    expect(String(reply[5])).toBe("2"); // counted once: the expired attempt charged nothing
    const before = sent.length;
    expect(String(((await link.run(CHARGE, "charge", keys, args, timed)) as string[])[5])).toBe("3");
    expect(sent.length - before).toBe(1);
  });

  it("a client that is slow to send (the forward trip 300–500 ms) never lets a command charge after its caller timed out (regression: the offset learned from send times was late by the forward trip)", async () => {
    let delay = 300;
    const call = ioredisCall(redis);
    const slow: RedisCall = async (command, args) => {
      await sleep(delay);
      return call(command, args);
    };
    const link = new Link(slow, 350, 0, 100);
    const { keys, args } = chargeArgs("skew:slow-send:");
    // learned while every command reaches Redis 300 ms after it is sent (within the 350 ms timeout)
    for (let i = 0; i < 3; i++) expect(((await link.run(CHARGE, "charge", keys, args, timed)) as string[])[0]).toBe("c");
    delay = 500; // now the command reaches Redis 150 ms after its caller gave up
    await expect(link.run(CHARGE, "charge", keys, args, timed)).rejects.toBeInstanceOf(RedisTimeoutError);
    await sleep(400);
    const [, count] = await redis.hmget(`skew:slow-send:${budgets[0]!.key}`, "s", "c");
    expect(count).toBe("3"); // the late command charged nothing
  });

  it("Redis's clock stepping back an hour: deadlines are late until the next reply, which lowers the offset again", async () => {
    let shift = 0;
    const link = new Link(ioredisCall(redis), 500, 1, 100, () => performance.now() + shift);
    const { keys, args } = chargeArgs("skew:back:");
    await link.run(CHARGE, "charge", keys, args, timed);
    const learned = link.offset!;
    shift = 3_600_000;
    expect(((await link.run(CHARGE, "charge", keys, args, timed)) as string[])[0]).toBe("c");
    expect(link.offset!).toBeLessThan(learned - 3_500_000);
  });
});
