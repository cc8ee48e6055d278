/**
 * Issue 8, defect 1, on Redis with the host's clock: a window stamped after `now` (the host clock
 * stepped back) starts now, so Retry-After and RateLimit-Reset are never longer than the window —
 * in the charge script and in the read script (`GET /rate-limit`), as in MemoryStore and `evaluate`.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createPolicy, MemoryStore } from "../../src/index.js";
import { RedisStore } from "../../src/redis/index.js";
import { get, key } from "../fixtures.js";
import { cleanUp, ioredis, ioredisCall, uniquePrefix } from "./helpers.js";
import { retriedAcrossMidnight, skewedMidnightReleases } from "./midnight-release.js";

const redis = ioredis();
const prefix = uniquePrefix("clock-step");
afterAll(async () => {
  await cleanUp(redis, prefix);
  redis.disconnect();
});

describe("issue 8 defect 1 on Redis (clock: host)", () => {
  it("a clock stepped back one hour inside a window: Retry-After and RateLimit-Reset never longer than the window, nor the status() reset", async () => {
    let now = Date.UTC(2026, 10, 23, 10);
    const credential = key({}, false, "key_clock");
    const policy = createPolicy({ store: new RedisStore({ redis: ioredisCall(redis), prefix, clock: "host" }), clock: () => now });
    for (let i = 0; i < 600; i++) expect((await policy.check(get("/rate-limit"), { credential, roles: {} })).allowed).toBe(true);
    now -= 3600_000;
    const refused = await policy.check(get("/rate-limit"), { credential, roles: {} });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers["Retry-After"])).toBeGreaterThan(0);
    expect(Number(refused.headers["Retry-After"])).toBeLessThanOrEqual(60);
    expect(Number(refused.headers["RateLimit-Reset"])).toBeLessThanOrEqual(60);
    const status = await policy.status(credential);
    expect(status.budgets.general!.reset).toBeLessThanOrEqual(60);
    expect(status.budgets.general!.remaining).toBe(0);
  });
});

// Hosts sharing one store, their clocks apart by less than a window: a host behind read a window
// stamped ahead of it as starting at its own now and wrote that start back, so the window ended that
// much sooner for the hosts ahead; two hosts 30.5 s apart admitted 930 of 930 reads on a budget of 60
// a minute, and 61 s apart 300 of 300 (found by a multi-process drill). A window less than a window
// ahead keeps its start now.
describe("hosts whose clocks are apart by less than a window admit no more than the budget", () => {
  for (const [name, makeStore] of [
    ["MemoryStore", () => new MemoryStore()],
    ["RedisStore", () => new RedisStore({ redis: ioredisCall(redis), prefix: `${prefix}skew${Math.random()}:`, clock: "host" })],
  ] as const) {
    it(`${name}: two hosts 30.5 s apart, 300 audience reads in turn over 120 s: 60 a minute, 120 in all (spec §8)`, async () => {
      const store = makeStore();
      let real = Date.UTC(2026, 10, 23, 10);
      const ahead = createPolicy({ store, clock: () => real });
      const behind = createPolicy({ store, clock: () => real - 30_500 });
      const credential = key({ nl_1: { audience: "read" } }, false, `key_skew_${name}`);
      let allowed = 0;
      for (let i = 0; i < 300; i++) {
        const d = await (i % 2 === 0 ? ahead : behind).check(get("/newsletters/nl_1/subscribers"), { credential, roles: { nl_1: "owner" } });
        if (d.allowed) allowed++;
        else {
          expect(d.status).toBe(429);
          expect(Number(d.headers["Retry-After"])).toBeLessThanOrEqual(60);
        }
        real += 400;
      }
      expect(allowed).toBe(120);
    });
  }
});

// RedisStore is the store hosts share: a window stamped a window or more ahead of a host is another
// host's as often as a stepped-back clock's. A host behind that read it as starting now wrote that
// start back, and the hosts ahead then saw the window ended: two hosts 61 s apart admitted 100 of 100
// reads on a budget of 5 a minute (found by a review). RedisStore never moves a window's start back.
describe("RedisStore: hosts a window or more apart admit no more than the budget per window of the host ahead", () => {
  for (const skew of [61_000, 180_000]) {
    it(`two hosts ${skew / 1000} s apart, 300 audience reads in turn over 120 s: 120 allowed (60 a minute)`, async () => {
      const store = new RedisStore({ redis: ioredisCall(redis), prefix: `${prefix}far${skew}:`, clock: "host" });
      let real = Date.UTC(2026, 10, 23, 10);
      const ahead = createPolicy({ store, clock: () => real });
      const behind = createPolicy({ store, clock: () => real - skew });
      const credential = key({ nl_1: { audience: "read" } }, false, `key_far_${skew}`);
      let allowed = 0;
      for (let i = 0; i < 300; i++) {
        const d = await (i % 2 === 0 ? ahead : behind).check(get("/newsletters/nl_1/subscribers"), { credential, roles: { nl_1: "owner" } });
        if (d.allowed) allowed++;
        else expect(Number(d.headers["Retry-After"])).toBeLessThanOrEqual(60);
        real += 400;
      }
      expect(allowed).toBe(120);
    });
  }
});

describe("hosts apart across midnight: each release uncounts its own day's charge (found by a Redis drill)", () => {
  for (const [name, makeStore] of [
    ["MemoryStore", () => new MemoryStore()],
    ["RedisStore", () => new RedisStore({ redis: ioredisCall(redis), prefix: `${prefix}midnight:`, clock: "host" })],
  ] as const) {
    it(`${name}: DESIGN §7 release: host A 10 s before midnight, host B 10 s after; A's send between the releases leaves B's release counting, and B its two sends of the day (B's release answered false and its failed send stayed counted: 200, 429)`, async () => {
      expect(await skewedMidnightReleases(makeStore(), name.toLowerCase())).toEqual([true, true, 200, 200]);
    });

    it(`${name}: DESIGN §7 idempotency: a send released by the host ahead and counted again there is a replay when the host behind retries it (the send runs twice in all, not three times)`, async () => {
      expect(await retriedAcrossMidnight(makeStore(), `${name.toLowerCase()}_retry`)).toEqual([[false, ["dispatch"]], [true, []]]);
    });
  }
});

// A request stamped a day ahead, then the clock right again (spec §8 budgets): the pure API and
// MemoryStore keep the spent window beside the one ahead (4 of the 5 reads below: the read back is
// refused); Redis keeps one window per budget, never re-based, so the reads stamped back count in
// the window ahead: at most one more budget in all, never without end.
describe("spec §8 budgets: a read stamped a day ahead on Redis (clock: host) admits at most one more budget, and a flapping clock no more", () => {
  const config = { budgets: { audience: { limit: 3, window: 60 } } };
  const read = get("/newsletters/nl_1/subscribers");
  const roles = { nl_1: "owner" };
  it("3 reads spend the window, one read a day ahead, then 10 reads back at the right time: 6 admitted on a budget of 3 (4 on MemoryStore)", async () => {
    for (const [name, store, expected] of [
      ["RedisStore", new RedisStore({ redis: ioredisCall(redis), prefix: `${prefix}ahead${Math.random()}:`, clock: "host" }), 6],
      ["MemoryStore", new MemoryStore(), 4],
    ] as const) {
      let now = Date.UTC(2026, 10, 23, 10);
      const policy = createPolicy({ store, clock: () => now, config });
      const credential = key({ nl_1: { audience: "read" } }, false, `key_ahead_${name}`);
      let allowed = 0;
      for (let i = 0; i < 3; i++) if ((await policy.check(read, { credential, roles })).allowed) allowed++;
      now += 86_400_000;
      if ((await policy.check(read, { credential, roles })).allowed) allowed++;
      now -= 86_400_000 - 1000;
      for (let i = 0; i < 10; i++) if ((await policy.check(read, { credential, roles })).allowed) allowed++;
      expect(allowed, name).toBe(expected);
    }
  });

  it("a clock flapping between T + i·100 ms and a day ahead, 50 reads: 4 admitted on a budget of 3 on Redis (the reads back count in the window ahead), 6 on MemoryStore (each reading its own window)", async () => {
    for (const [name, store, expected] of [
      ["RedisStore", new RedisStore({ redis: ioredisCall(redis), prefix: `${prefix}flap${Math.random()}:`, clock: "host" }), 4],
      ["MemoryStore", new MemoryStore(), 6],
    ] as const) {
      let now = 0;
      const policy = createPolicy({ store, clock: () => now, config });
      const credential = key({ nl_1: { audience: "read" } }, false, `key_flap_${name}`);
      let allowed = 0;
      for (let i = 0; i < 50; i++) {
        now = Date.UTC(2026, 10, 23, 10) + (i % 2 === 0 ? 0 : 86_400_000) + i * 100;
        if ((await policy.check(read, { credential, roles })).allowed) allowed++;
      }
      expect(allowed, name).toBe(expected);
    }
  });
});
