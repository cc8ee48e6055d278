import { afterAll, beforeEach, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { createPolicy, MemoryStore, PolicyConfigError, type ChargeOutcome, type ChargeRequest } from "../../src/index.js";
import { RedisStore, type RedisStoreOptions } from "../../src/redis/index.js";
import type { ReleaseTicket } from "../../src/types.js";
import { plainMembers, T0 } from "../fixtures.js";
import { cleanUp, ioredis, ioredisCall, uniquePrefix } from "./helpers.js";

const DAY = 86_400_000;
const redis: Redis = ioredis();
const root = uniquePrefix("outcomes");
let run = 0;
let store: RedisStore;
let memory: MemoryStore;

function makeStore(options: Partial<RedisStoreOptions> = {}): RedisStore {
  return new RedisStore({ redis: ioredisCall(redis), prefix: `${root}${++run}:`, ...options });
}

beforeEach(() => {
  store = makeStore();
  memory = new MemoryStore();
});

afterAll(async () => {
  await cleanUp(redis, root);
  redis.disconnect();
});

let ids = 0;
const general = { key: "b:5.key_1:general", limit: 3, windowMs: 10_000 };
const write = { key: "b:5.key_1:write", limit: 2, windowMs: 20_000 };
const day = Math.floor(T0 / DAY);
const dispatch = { name: "dispatch" as const, key: "d:4.nl_1", day, limit: 2, resetAt: (day + 1) * DAY, offsetMs: 0 };

function req(extra: Partial<ChargeRequest> = {}, now = T0): ChargeRequest {
  return { id: `req_${++ids}`, now, budgets: [general, write], refused: false, ...extra };
}
const idem = (key: string, fingerprint = "POST /articles/a_1/send") => ({ key: `k:5.key_1:${key}`, fingerprint, ttlMs: DAY });

/** Charges both stores and holds the Redis outcome to the in-memory one. */
async function both(request: ChargeRequest): Promise<ChargeOutcome> {
  const expected = memory.charge(request);
  const actual = await store.charge(request);
  expect(actual).toEqual(plainMembers(expected));
  // each store's ticket names its own charge
  if ("member" in actual && actual.member !== undefined && "member" in expected && expected.member !== undefined) memoryMember.set(actual.member, expected.member);
  return actual;
}
/** Redis's member → MemoryStore's, for the same charge. */
const memoryMember = new Map<string, string>();
async function releaseBoth(ticket: ReleaseTicket, now = T0): Promise<boolean> {
  const expected = memory.release({ ...ticket, member: memoryMember.get(ticket.member) ?? ticket.member }, now);
  const actual = await store.release(ticket, now);
  expect(actual).toBe(expected);
  return actual;
}
const ticketOf = (o: ChargeOutcome, idempotencyKey?: string): ReleaseTicket => {
  if (o.kind !== "charged" || o.member === undefined) throw new Error(`no cap charge: ${JSON.stringify(o)}`);
  return { cap: "dispatch", key: dispatch.key, day, member: o.member, ...(idempotencyKey && { idempotencyKey }) };
};

describe("RedisStore outcomes, held to MemoryStore (charge.ts)", () => {
  it("§8.1 charged: every budget of the request is charged, counted separately, windows start at the first charge", async () => {
    const o = await both(req());
    expect(o).toEqual({ kind: "charged", replay: false, windows: [{ count: 1, resetAt: T0 + 10_000 }, { count: 1, resetAt: T0 + 20_000 }] });
    const o2 = await both(req({}, T0 + 1_500));
    expect(o2.windows).toEqual([{ count: 2, resetAt: T0 + 10_000 }, { count: 2, resetAt: T0 + 20_000 }]);
  });

  it("DESIGN §2 budget_spent: a request refused because a budget is spent charges nothing, not even its open budgets", async () => {
    await both(req());
    await both(req());
    const spent = await both(req());
    expect(spent.kind).toBe("budget_spent");
    expect(spent.windows).toEqual([{ count: 2, resetAt: T0 + 10_000 }, { count: 2, resetAt: T0 + 20_000 }]);
    expect(await store.read([general, write], T0)).toEqual(memory.read([general, write], T0));
  });

  it("DESIGN §4 fixed windows: a window ends at start + window and the next charge opens a new one", async () => {
    await both(req({ budgets: [general] }));
    await both(req({ budgets: [general] }, T0 + 9_999));
    const o = await both(req({ budgets: [general] }, T0 + 10_000));
    expect(o.windows).toEqual([{ count: 1, resetAt: T0 + 20_000 }]);
  });

  it("DESIGN §2 a refused plan (400/403/404) charges its budgets and nothing else: no key recorded, no cap", async () => {
    const o = await both(req({ refused: true, idempotency: idem("k1"), cap: dispatch }));
    expect(o).toMatchObject({ kind: "charged", replay: false });
    expect(o.kind === "charged" && o.member).toBeFalsy();
    // the key was not recorded: the same key on another request is no conflict
    expect((await both(req({ idempotency: idem("k1", "POST /other") }))).kind).toBe("charged");
  });

  it("DESIGN §7 conflict: the same key on a different method or path answers conflict, with the first fingerprint, budgets charged", async () => {
    await both(req({ idempotency: idem("k2", "POST /newsletters/nl_1/articles") }));
    const o = await both(req({ idempotency: idem("k2", "PATCH /articles/a_1") }));
    expect(o).toMatchObject({ kind: "conflict", fingerprint: "POST /newsletters/nl_1/articles" });
    expect(o.windows.map((w) => w.count)).toEqual([2, 2]);
  });

  it("DESIGN §7 replay: a key already recorded replays; an expired key (24 h) records afresh", async () => {
    const budgets = [{ ...general, limit: 100 }];
    await both(req({ budgets, idempotency: idem("k3") }));
    expect(await both(req({ budgets, idempotency: idem("k3") }))).toMatchObject({ kind: "charged", replay: true });
    expect(await both(req({ budgets, idempotency: idem("k3") }, T0 + DAY))).toMatchObject({ kind: "charged", replay: false });
  });

  it("spec §8 daily cap: an allowed dispatch adds a member; at the limit cap_reached with the count, budgets still charged", async () => {
    const budgets = [{ ...general, limit: 100 }];
    const a = await both(req({ budgets, cap: dispatch }));
    expect(a).toMatchObject({ kind: "charged", replay: false, member: "m1" });
    const b = await both(req({ budgets, cap: dispatch }));
    expect(b).toMatchObject({ kind: "charged", member: "m2" });
    const c = await both(req({ budgets, cap: dispatch }));
    expect(c).toMatchObject({ kind: "cap_reached", count: 2 });
    expect(c.windows[0]!.count).toBe(3);
    // the next day counts from zero
    const next = { ...dispatch, day: day + 1, resetAt: (day + 2) * DAY };
    expect(await both(req({ budgets, cap: next }, (day + 1) * DAY))).toMatchObject({ kind: "charged", member: "m3" });
  });

  it("DESIGN §7 a key that already counted toward the cap counts nothing more and is not refused by the cap", async () => {
    const budgets = [{ ...general, limit: 100 }];
    await both(req({ budgets, idempotency: idem("s1"), cap: dispatch }));
    await both(req({ budgets, cap: dispatch }));
    const retry = await both(req({ budgets, idempotency: idem("s1"), cap: dispatch }));
    expect(retry).toEqual({ kind: "charged", replay: true, windows: retry.windows });
    expect((await both(req({ budgets, cap: dispatch }))).kind).toBe("cap_reached");
  });

  it("DESIGN §7 release uncounts once (idempotent) and the released key counts again on its next allowed use, not as a replay", async () => {
    const budgets = [{ ...general, limit: 100 }];
    const first = await both(req({ budgets, idempotency: idem("s2"), cap: dispatch }));
    const ticket = ticketOf(first, idem("s2").key);
    expect(await releaseBoth(ticket)).toBe(true);
    expect(await releaseBoth(ticket)).toBe(false);
    const again = await both(req({ budgets, idempotency: idem("s2"), cap: dispatch }));
    // counted again, so it runs again: no replay (the released send failed downstream)
    expect(again).toMatchObject({ kind: "charged", replay: false, member: "m2" });
    // the old ticket no longer matches the key's member: releasing it leaves the new charge counted
    expect(await releaseBoth(ticket)).toBe(false);
    expect(await both(req({ budgets, idempotency: idem("s2"), cap: dispatch }))).toMatchObject({ kind: "charged", replay: true });
  });

  it("release of a past day's ticket uncounts its own day's charge once a later day has counted, once (as MemoryStore; it uncounted nothing, so a host behind midnight could keep a host ahead's release from counting: found by a Redis drill)", async () => {
    const budgets = [{ ...general, limit: 100 }];
    const first = await both(req({ budgets, cap: dispatch }));
    const next = { ...dispatch, day: day + 1, resetAt: (day + 2) * DAY };
    await both(req({ budgets, cap: next }, (day + 1) * DAY));
    expect(await releaseBoth(ticketOf(first), (day + 1) * DAY)).toBe(true);
    expect(await releaseBoth(ticketOf(first), (day + 1) * DAY)).toBe(false);
  });

  it("regression (differential): a window with 1 ms left in the host's clock is still found after that 1 ms passes in Redis's", async () => {
    const budgets = [{ ...general, limit: 100 }];
    await both(req({ budgets }));
    await both(req({ budgets }, T0 + 9_999));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await both(req({ budgets }, T0 + 9_999))).windows).toEqual([{ count: 3, resetAt: T0 + 10_000 }]);
  });

  it("read: no open window reads { count: 0, resetAt: 0 }; reading charges nothing", async () => {
    expect(await store.read([general, write], T0)).toEqual([{ count: 0, resetAt: 0 }, { count: 0, resetAt: 0 }]);
    await both(req());
    expect(await store.read([general, write], T0 + 1)).toEqual(memory.read([general, write], T0 + 1));
    expect(await store.read([general, write], T0 + 10_000)).toEqual(memory.read([general, write], T0 + 10_000));
    expect(await store.read([], T0)).toEqual([]);
  });

  it("fractional clocks round-trip exactly (numbers cross as %.17g)", async () => {
    const now = T0 + 0.1 + 0.2;
    await both(req({}, now));
    const o = await both(req({}, now + 1234.5678));
    expect(o.windows[0]!.resetAt).toBe(now + 10_000);
  });

  it("every charge call is a request of its own: the same ChargeRequest sent twice is charged twice, as MemoryStore charges it", async () => {
    const r = req({ budgets: [{ ...general, limit: 100 }], cap: dispatch });
    expect(await store.charge(r)).toMatchObject({ kind: "charged", windows: [{ count: 1 }] });
    expect(await store.charge({ ...r })).toMatchObject({ kind: "charged", windows: [{ count: 2 }] });
    expect(await store.read([general], T0 + 5)).toEqual([{ count: 2, resetAt: T0 + 10_000 }]);
  });
});

describe('RedisStore clock: "redis" reads Redis TIME', () => {
  it("uses Redis time for windows and the day, and reports it as outcome.now", async () => {
    const s = makeStore({ clock: "redis" });
    const offsetMs = 5 * 3_600_000;
    const before = Date.now();
    // the host's clock and day are three days off: ignored
    const skewed = before + 3 * DAY;
    const cap = { ...dispatch, day: 0, resetAt: 1, offsetMs };
    const o = await s.charge(req({ budgets: [general], cap }, skewed));
    const after = Date.now();
    expect(o.kind).toBe("charged");
    expect(o.now).toBeGreaterThanOrEqual(before - 2_000);
    expect(o.now).toBeLessThanOrEqual(after + 2_000);
    expect(o.windows[0]!.resetAt).toBe(o.now! + general.windowMs);
    const redisDay = Math.floor((o.now! + offsetMs) / DAY);
    const prefix = `${root}${run}:`;
    expect(await redis.sismember(`${prefix}${cap.key}:${redisDay}`, (o as { member: string }).member)).toBe(1);
    expect(await s.release({ cap: "dispatch", key: cap.key, day: redisDay, member: (o as { member: string }).member }, 0)).toBe(true);
    expect((await s.read([general], 0))[0]!.count).toBe(1);
  });

  // Regression (Redis audit): status() measured the reset from the host's clock, so a host 30 min
  // behind Redis was told 1 860 s where the headers said 60.
  it("status (GET /rate-limit) gives the same seconds left as the headers, however far the host's clock is off", async () => {
    const behind = () => Date.now() - 30 * 60_000;
    const policy = createPolicy({ store: makeStore({ clock: "redis" }), clock: behind });
    const d = await policy.check({ method: "GET", path: "/me" }, { credential: { id: "clock_k", kind: "api_key", newsletters: {}, account: true }, roles: {} });
    expect(d.headers["RateLimit-Reset"]).toBe("60");
    const status = await policy.status({ id: "clock_k", kind: "api_key", newsletters: {}, account: true });
    expect(status.budgets.general).toMatchObject({ remaining: 599 });
    expect(status.budgets.general!.reset).toBeGreaterThanOrEqual(59);
    expect(status.budgets.general!.reset).toBeLessThanOrEqual(60);
  });
});

describe("RedisStore with ids Redis carries as UTF-8 (found by a review of RedisStore with hostile ids)", () => {
  it("credentials whose ids differ only in a lone surrogate keep their own counters and keys, as in MemoryStore: one's write is not the other's replay", async () => {
    const write = { method: "POST", path: "/newsletters/nl_1/articles", idempotencyKey: "order-1", body: { title: "hello" } };
    const who = (id: string) => ({ credential: { id, kind: "oauth" as const, newsletters: { nl_1: { content: "write" as const } } }, roles: { nl_1: "owner" } });
    for (const s of [makeStore(), new MemoryStore()]) {
      const policy = createPolicy({ store: s, clock: () => T0, config: { docsUrl: "https://docs.example/errors" } });
      expect((await policy.check(write, who("tenant_\uD800"))).allowed).toBe(true);
      const b = await policy.check(write, who("tenant_\uDC00"));
      expect(b.allowed, s.constructor.name).toBe(true);
      expect(b.reason, s.constructor.name).toEqual({ rule: "allowed" });
      expect(b.headers["RateLimit-Remaining"], s.constructor.name).toBe("59");
    }
  });

  it("the same key on two paths that differ in a lone surrogate is a conflict, as in MemoryStore", async () => {
    const who = { credential: { id: "key_1", kind: "api_key" as const, newsletters: { nl_1: { sending: "write" as const } } }, roles: { nl_1: "owner" } };
    const send = (article: string) => ({ method: "POST", path: `/articles/${article}/send`, newsletter: "nl_1", idempotencyKey: "k" });
    for (const s of [makeStore(), new MemoryStore()]) {
      const policy = createPolicy({ store: s, clock: () => T0, config: { docsUrl: "https://docs.example/errors" } });
      expect((await policy.check(send("\uD800"), who)).allowed).toBe(true);
      expect((await policy.check(send("\uDC00"), who)).status, s.constructor.name).toBe(409);
    }
  });
});

describe("RedisStore options", () => {
  const call = ioredisCall(redis);
  it.each([
    ["redis", {}],
    ["redis", { redis: "nope" }],
    ["prefix", { redis: call, prefix: 1 }],
    ["clock", { redis: call, clock: "server" }],
    ["timeoutMs", { redis: call, timeoutMs: 0 }],
    ["timeoutMs", { redis: call, timeoutMs: Number.NaN }],
    ["retries", { redis: call, retries: -1 }],
    ["retries", { redis: call, retries: 1.5 }],
    ["dedupeMs", { redis: call, dedupeMs: 0.5 }],
    // misspelt options left their defaults in force without a word, and a timeout past a timer's range never fired (found by a black-box review)
    ["prefx", { redis: call, prefx: "staging:" }],
    ["timeoutMS", { redis: call, timeoutMS: 50 }],
    ["Cluster", { redis: call, Cluster: true }],
    ["timeoutMs", { redis: call, timeoutMs: 3e9 }],
    ["timeoutMs", { redis: call, timeoutMs: 2 ** 30, retries: 1 }],
  ])("an invalid %s throws PolicyConfigError naming the field (%j)", (field, options) => {
    try {
      new RedisStore(options as unknown as RedisStoreOptions);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(PolicyConfigError);
      expect((error as PolicyConfigError).field).toBe(field);
    }
  });

  it("throws PolicyConfigError for a missing options object", () => {
    expect(() => new RedisStore(undefined as unknown as RedisStoreOptions)).toThrow(PolicyConfigError);
  });
});
