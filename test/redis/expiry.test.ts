/**
 * Every key the store writes expires: windows with their window, cap sets at day end (+ grace),
 * idempotency records after their 24 h, remembered outcomes after dedupeMs. Expiries are relative,
 * so a host clock far from Redis's moves no key's lifetime.
 */
import { describe, expect, it } from "vitest";
import { createPolicy } from "../../src/index.js";
import { RedisStore } from "../../src/redis/index.js";
import { get, key, post } from "../fixtures.js";
import { ioredisCall, keysUnder, sharedRedis } from "./helpers.js";

const { redis, root } = sharedRedis("expiry");
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const SLACK = 10_000;
/** A cap set outlives its day by a week (key-layout.ts CAP_GRACE_MS; an hour let a clock an hour ahead make it vanish before midnight: found by a clock drill). */
const GRACE = 7 * DAY;

const owner = key({ nl_1: { content: "write", audience: "write", sending: "write" } }, true);
const who = { credential: owner, roles: { nl_1: "owner" } };

/** Writes every kind of key: windows, a key record with and without a cap charge, cap sets, the day marker, the sequence, remembered outcomes; then releases. */
async function writeEverything(prefix: string, clock: "host" | "redis", now: () => number) {
  const policy = createPolicy({ store: new RedisStore({ redis: ioredisCall(redis), prefix, clock }), clock: now, config: { dayStartsAtUtcOffsetMinutes: 90 } });
  await policy.check(get("/newsletters/nl_1/subscribers"), who);
  await policy.check(post("/newsletters/nl_1/articles", { idempotencyKey: "create-1" }), who);
  const send = await policy.check(post("/articles/a_1/send", { newsletter: "nl_1", idempotencyKey: "send-1" }), who);
  await policy.check(post("/articles/a_1/test-send", { newsletter: "nl_1", body: { to: ["a@example.com"] } }), who);
  expect(send.allowed).toBe(true);
  await policy.release(send);
  await policy.check(post("/articles/a_2/schedule", { newsletter: "nl_1" }), who);
}

async function ttls(prefix: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const k of await keysUnder(redis, prefix)) out.set(k.slice(prefix.length), await redis.pttl(k));
  return out;
}

describe("key expiry: PTTL > 0 on every key written", () => {
  it.each([
    ["the host's clock, ten years ahead of Redis's", "host" as const, Date.now() + 3_650 * DAY],
    ["the host's clock, ten years behind Redis's", "host" as const, Date.now() - 3_650 * DAY],
    ["Redis's clock", "redis" as const, Date.now()],
  ])("with %s", async (_, clock, at) => {
    const prefix = `${root}${clock}${at > Date.now() ? "+" : "-"}:`;
    const fixed = at;
    await writeEverything(prefix, clock, () => fixed);
    const found = await ttls(prefix);
    const kinds = [...found.keys()].map((k) => k.split(":")[0]).sort();
    expect(new Set(kinds)).toEqual(new Set(["b", "d", "x", "k", "r", "seq", "t"]));
    for (const [k, pttl] of found) {
      expect(pttl, k).toBeGreaterThan(0);
      if (k.startsWith("b:")) expect(pttl, k).toBeLessThanOrEqual(60_000 + SLACK); // with its window
      if (k.startsWith("k:")) expect(pttl, k).toBeLessThanOrEqual(DAY + SLACK); // DESIGN §7: 24 h
      if (k.startsWith("x:")) expect(pttl, k).toBeLessThanOrEqual(DAY + SLACK); // the reset index lives as long as its newest record
      if (k.startsWith("d:") || k.startsWith("t:")) expect(pttl, k).toBeLessThanOrEqual(DAY + GRACE); // the day's end + grace
      if (k.startsWith("r:")) expect(pttl, k).toBeLessThanOrEqual(300_000); // remembered outcomes: dedupeMs
      if (k === "seq") expect(pttl, k).toBeLessThanOrEqual(3 * DAY + GRACE); // outlives every cap set that may hold its members
    }
    // the sequence outlives every cap set holding its members: restarted sooner, it handed out a
    // member an older set still held (found by a review once the sets' grace became a week)
    const sets = [...found].filter(([k]) => k.startsWith("d:") || k.startsWith("t:")).map(([, pttl]) => pttl);
    expect(found.get("seq")! - 2 * DAY).toBeGreaterThan(Math.max(...sets));
  });

  it("a cap set lives until the day's end (+ a week's grace) in the deciding clock: 30 minutes before midnight UTC, a week and 30 minutes", async () => {
    const prefix = `${root}midnight:`;
    const day = Math.floor(Date.now() / DAY) + 7;
    const policy = createPolicy({ store: new RedisStore({ redis: ioredisCall(redis), prefix }), clock: () => (day + 1) * DAY - 30 * 60_000 });
    const send = await policy.check(post("/articles/a_1/send", { newsletter: "nl_1" }), who);
    const pttl = await redis.pttl(`${prefix}d:4.nl_1:${send.release!.day}`);
    expect(pttl).toBeGreaterThan(30 * 60_000 + GRACE - 60_000);
    expect(pttl).toBeLessThanOrEqual(30 * 60_000 + GRACE);
  });

  it("a released idempotency record keeps its expiry", async () => {
    const prefix = `${root}released:`;
    const policy = createPolicy({ store: new RedisStore({ redis: ioredisCall(redis), prefix }), clock: () => Date.now() });
    const send = await policy.check(post("/articles/a_1/send", { newsletter: "nl_1", idempotencyKey: "r-1" }), who);
    await policy.release(send);
    const record = `${prefix}${send.release!.idempotencyKey}`;
    expect(await redis.hgetall(record)).toMatchObject({ f: expect.stringMatching(/^POST \/articles\/a_1\/send [0-9a-f]{32}$/) });
    expect(await redis.hexists(record, "m")).toBe(0);
    expect(await redis.pttl(record)).toBeGreaterThan(DAY - 60_000);
  });
});

describe("the credential's index of idempotency records holds the live ones only", () => {
  it("keyed writes on four days: the index holds about one day's keys, not every key ever used, and a reset clears the live records (it grew by every key; found by a Redis review: 200 000 members after four days)", async () => {
    const prefix = `${root}index-days:`;
    let now = Date.now();
    const policy = createPolicy({ store: new RedisStore({ redis: ioredisCall(redis), prefix }), clock: () => now, config: { budgets: { write: { limit: 1_000 }, general: { limit: 1_000 } } } });
    const index = async () => (await keysUnder(redis, prefix)).find((k) => k.slice(prefix.length).startsWith("x:"))!;
    for (let d = 0; d < 4; d++) {
      for (let i = 0; i < 30; i++) expect((await policy.check(post("/newsletters/nl_1/articles", { idempotencyKey: `day${d}-${i}` }), who)).status).toBe(200);
      now += DAY + 2 * HOUR; // past the records' 24 h and the index's hour of grace
    }
    now -= DAY + 2 * HOUR;
    expect(await redis.zcard(await index())).toBe(30); // the last day's keys; the three days before have left
    // a key of the last day is a replay until the reset, and a new request after it
    expect((await policy.check(post("/newsletters/nl_1/articles", { idempotencyKey: "day3-0" }), who)).reason).toEqual({ rule: "allowed", replay: true });
    await policy.reset({ credential: owner });
    expect((await policy.check(post("/newsletters/nl_1/articles", { idempotencyKey: "day3-0" }), who)).reason).toEqual({ rule: "allowed" });
  });

  it("a reset clears the records an earlier version's index set lists too (`i:<scope>`), and the set", async () => {
    const prefix = `${root}index-legacy:`;
    const now = Date.now();
    const policy = createPolicy({ store: new RedisStore({ redis: ioredisCall(redis), prefix }), clock: () => now });
    const first = await policy.check(post("/newsletters/nl_1/articles", { idempotencyKey: "old-1" }), who);
    expect(first.status).toBe(200);
    // as an earlier version kept it: the record listed in a set, not in the sorted set
    const keys = await keysUnder(redis, prefix);
    const sorted = keys.find((k) => k.slice(prefix.length).startsWith("x:"))!;
    const record = keys.find((k) => k.slice(prefix.length).startsWith("k:"))!;
    const legacy = `${prefix}i:${sorted.slice(prefix.length + 2)}`;
    await redis.del(sorted);
    await redis.sadd(legacy, record);
    await redis.pexpire(legacy, DAY);
    await policy.reset({ credential: owner });
    expect(await redis.exists(record, legacy)).toBe(0);
    expect((await policy.check(post("/newsletters/nl_1/articles", { idempotencyKey: "old-1" }), who)).reason).toEqual({ rule: "allowed" });
  });
});
