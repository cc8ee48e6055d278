/**
 * Resets: `policy.reset({ credential })` clears the credential's budget windows, today's test sends
 * and its idempotency records; `policy.reset({ newsletter })` clears the newsletter's dispatches
 * today. Nothing else is touched. Through the pure `reset` and createPolicy over MemoryStore and
 * RedisStore alike.
 */
import { describe, expect, it } from "vitest";
import { createPolicy, defineConfig, emptyUsage, evaluate, PolicyConfigError, reset, type Decision, type PolicyStore, type Who } from "../../src/index.js";
import { RedisStore } from "../../src/redis/index.js";
import { T0, get, key, post } from "../fixtures.js";
import { counting, ioredisCall } from "../redis/helpers.js";
import { redisPrefix, runner, WAYS } from "./helpers.js";

const grants = { content: "write", audience: "write", sending: "write" } as const;
const alice = key({ nl_1: grants, nl_2: grants }, true, "key_alice");
const bob = key({ nl_1: grants, nl_2: grants }, true, "key_bob");
const as = (credential = alice): Who => ({ credential, roles: { nl_1: "owner", nl_2: "owner" }, limits: { budgets: { audience: { limit: 2 } }, caps: { dispatch: { limit: 1 }, testSend: { limit: 1 } } } });
const subscribers = get("/newsletters/nl_1/subscribers");
const send = (newsletter: string, article: string, idempotencyKey?: string) => post(`/articles/${article}/send`, { newsletter, ...(idempotencyKey && { idempotencyKey }) });
const testSend = (newsletter = "nl_1") => post("/articles/a_1/test-send", { newsletter, body: { to: ["a@example.com"] } });
// the same key on another newsletter's path: a conflict while the key is recorded
const create = (idempotencyKey: string, newsletter = "nl_1") => post(`/newsletters/${newsletter}/articles`, { idempotencyKey, body: { title: "t" } });
const statuses = (ds: Decision[]) => ds.map((d) => d.status);

describe.each(WAYS)("resets, through %s", (way) => {
  it("reset({ credential }) clears its budget windows, today's test sends and its idempotency records; nothing of another credential", async () => {
    const r = runner(way);
    for (const who of [as(alice), as(bob)]) {
      await r.check(subscribers, who);
      await r.check(subscribers, who); // audience spent (2 of 2)
      await r.check(testSend(), who); // test sends spent (1 of 1)
      await r.check(create("idem-1"), who);
    }
    await r.reset({ credential: { id: alice.id, kind: alice.kind } });
    const a = await r.check(subscribers, as(alice));
    expect(a.headers).toMatchObject({ "RateLimit-Remaining": "1", "RateLimit-Reset": "60" }); // a new window
    expect((await r.check(testSend(), as(alice))).status).toBe(200);
    const reused = await r.check(create("idem-1", "nl_2"), as(alice)); // a new request again: no conflict, no replay
    expect(reused.status).toBe(200);
    expect(reused.reason).toEqual({ rule: "allowed" });
    // bob is untouched
    expect(statuses([await r.check(subscribers, as(bob)), await r.check(testSend(), as(bob)), await r.check(create("idem-1", "nl_2"), as(bob))])).toEqual([429, 429, 409]);
  });

  it("reset({ credential }) leaves the newsletters' dispatch counts alone (they belong to the newsletter)", async () => {
    const r = runner(way);
    expect((await r.check(send("nl_1", "a_1"), as(alice))).status).toBe(200);
    await r.reset({ credential: alice });
    expect((await r.check(send("nl_1", "a_2"), as(alice))).status).toBe(429);
  });

  it("reset({ newsletter }) clears today's dispatch count of that newsletter only; budgets and other newsletters untouched", async () => {
    const r = runner(way);
    await r.check(subscribers, as(alice));
    expect(statuses([await r.check(send("nl_1", "a_1"), as(alice)), await r.check(send("nl_2", "a_2"), as(bob))])).toEqual([200, 200]);
    await r.reset({ newsletter: "nl_1" });
    const again = await r.check(send("nl_1", "a_3"), as(bob));
    expect(again.status).toBe(200);
    expect((await r.check(send("nl_1", "a_4"), as(alice))).status).toBe(429); // 1 of 1 again
    expect((await r.check(send("nl_2", "a_5"), as(alice))).status).toBe(429); // nl_2 untouched
    expect((await r.check(subscribers, as(alice))).status).toBe(200);
    expect((await r.check(subscribers, as(alice))).status).toBe(429); // alice's audience window kept its count
  });

  it("after reset({ newsletter }), a retry whose key already counted is still a replay: counted once, not counted again", async () => {
    const r = runner(way);
    expect((await r.check(send("nl_1", "a_1", "send-1"), as(alice))).status).toBe(200);
    await r.reset({ newsletter: "nl_1" });
    const retry = await r.check(send("nl_1", "a_1", "send-1"), as(alice));
    expect(retry.reason).toEqual({ rule: "allowed", replay: true });
    expect((await r.check(send("nl_1", "a_2"), as(bob))).status).toBe(200); // the place the reset freed
  });

  it("a reset names exactly one target; anything else is a host mistake (PolicyConfigError)", async () => {
    const r = runner(way);
    for (const [target, field] of [
      [{}, "target"],
      [{ credential: alice, newsletter: "nl_1" }, "target"],
      [{ newsletter: "" }, "target.newsletter"],
      [{ credential: { id: "k" } }, "target.credential.kind"],
      // a misspelt field beside the target was dropped: the newsletter was not reset (found by an operating review)
      [{ credential: alice, newsleter: "nl_1" }, "target.newsleter"],
    ] as const) {
      await expect(r.reset(target as never)).rejects.toMatchObject({ name: "PolicyConfigError", field });
    }
  });
});

describe("reset over the stores", () => {
  it("RedisStore resets a credential in one round trip (one script: windows, test sends, idempotency index)", async () => {
    const { prefix, redis } = redisPrefix();
    const call = counting(ioredisCall(redis));
    const policy = createPolicy({ store: new RedisStore({ redis: call, prefix }), clock: () => T0 });
    for (let i = 0; i < 5; i++) await policy.check(create(`idem-${i}`), as(alice));
    await policy.check(testSend(), as(alice));
    const before = call.calls;
    await policy.reset({ credential: alice });
    expect(call.calls - before).toBe(1);
    await policy.reset({ newsletter: "nl_1" });
    expect(call.calls - before).toBe(2);
    const left = (await redis.keys(`${prefix}*`)).map((k) => k.slice(prefix.length)).filter((k) => !k.endsWith(":day"));
    // no window, test-send set, idempotency record or index is left: only seq, the retry memo and latest-day markers
    expect(left.filter((k) => /^[kibt]:/.test(k))).toEqual([]);
  });

  it("RedisStore with Redis's clock (clock: \"redis\") resets today's dispatch count by Redis's today", async () => {
    const { prefix, redis } = redisPrefix();
    const policy = createPolicy({ store: new RedisStore({ redis: ioredisCall(redis), prefix, clock: "redis" }) });
    expect((await policy.check(send("nl_1", "a_1"), as(alice))).status).toBe(200);
    expect((await policy.check(send("nl_1", "a_2"), as(alice))).status).toBe(429);
    await policy.reset({ newsletter: "nl_1" });
    expect((await policy.check(send("nl_1", "a_3"), as(alice))).status).toBe(200);
    await policy.check(testSend(), as(alice));
    expect((await policy.check(testSend(), as(alice))).status).toBe(429);
    await policy.reset({ credential: alice });
    expect((await policy.check(testSend(), as(alice))).status).toBe(200);
  });

  it("a store without reset: policy.reset throws PolicyConfigError naming store.reset (the method is optional for older stores)", async () => {
    const legacy: PolicyStore = { charge: () => ({ kind: "budget_spent", windows: [] }), release: () => false, read: () => [] };
    const policy = createPolicy({ store: legacy });
    await expect(policy.reset({ newsletter: "nl_1" })).rejects.toThrow(PolicyConfigError);
    await expect(policy.reset({ newsletter: "nl_1" })).rejects.toMatchObject({ field: "store.reset" });
  });

  it("the pure reset clears by the config it is given: today's dispatch count of a day that starts at UTC+10 (docs/operating.md; without the config it reads the spec's day, as documented: found by a black-box review)", () => {
    const config = defineConfig({ docsUrl: "https://docs.example/errors", dayStartsAtUtcOffsetMinutes: 600, caps: { dispatch: { limit: 1 } } });
    const sender = key({ nl_1: { sending: "write" } });
    const at = Date.UTC(2025, 0, 1, 20); // 06:00 on 2 January at UTC+10
    const send = (usage: ReturnType<typeof emptyUsage>, now: number, article: string) => evaluate(post(`/articles/${article}/send`, { newsletter: "nl_1" }), { credential: sender, roles: { nl_1: "owner" }, usage, now, config });
    const first = send(emptyUsage(), at, "a_1");
    expect(first.decision.allowed).toBe(true);
    expect(send(first.usage, at + 1000, "a_2").decision.status).toBe(429);
    const cleared = reset(first.usage, { newsletter: "nl_1" }, at + 2000, config);
    expect(cleared).not.toBe(first.usage);
    expect(send(cleared, at + 3000, "a_3").decision.allowed).toBe(true);
    // the spec's day (UTC) is 1 January there, where nothing was counted
    expect(reset(first.usage, { newsletter: "nl_1" }, at + 2000)).toBe(first.usage);
  });

  it("the pure reset returns the same snapshot when there is nothing to clear", () => {
    const usage = emptyUsage();
    expect(reset(usage, { credential: alice }, T0)).toBe(usage);
    expect(reset(usage, { newsletter: "nl_1" }, T0)).toBe(usage);
  });
});
