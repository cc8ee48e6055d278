/**
 * Limits per plan (`who.limits`): the spec's budgets and caps are defaults (spec §8 "Default: …");
 * a host passes the plan's limits with each request, and counting, headers, messages and status
 * follow them, through evaluate, MemoryStore and RedisStore alike.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createPolicy, evaluate, emptyUsage, MemoryStore, PolicyConfigError, type Limits, type Who } from "../../src/index.js";
import { comparableDecision } from "../../src/testing/index.js";
import { T0, get, key, post } from "../fixtures.js";
import { keysUnder } from "../redis/helpers.js";
import { FREE, PAID, redisPrefix, redisStore, runner, WAYS } from "./helpers.js";

const credential = key({ nl_1: { content: "write", audience: "write", sending: "write", insights: "read" } }, true);
const other = key({ nl_1: { content: "write", audience: "write", sending: "write" } }, false, "key_2");
const as = (limits?: Limits, c = credential): Who => ({ credential: c, roles: { nl_1: "owner" }, ...(limits && { limits }) });
const subscribers = get("/newsletters/nl_1/subscribers");
const send = (article: string) => post(`/articles/${article}/send`, { newsletter: "nl_1" });

describe.each(WAYS)("spec §8 budgets are defaults: the plan's limits (who.limits) decide, through %s", (way) => {
  it("the audience budget of the plan counts: 3 on the free plan, 6 on the paid plan; RateLimit-Policy shows q of the plan", async () => {
    const free = runner(way);
    const paid = runner(way);
    const freeDecisions = [];
    for (let i = 0; i < 4; i++) freeDecisions.push(await free.check(subscribers, as(FREE)));
    expect(freeDecisions.map((d) => d.status)).toEqual([200, 200, 200, 429]);
    expect(freeDecisions[0]!.headers["RateLimit-Policy"]).toBe('"general";q=600;w=60, "audience";q=3;w=60');
    expect(freeDecisions[2]!.headers).toMatchObject({ "RateLimit-Limit": "3", "RateLimit-Remaining": "0", "RateLimit-Reset": "60" });
    expect(freeDecisions[3]!.headers["Retry-After"]).toBe("60");
    expect(freeDecisions[3]!.body?.error.message).toContain("The audience budget (3 requests per 60 seconds) is spent");
    const paidDecisions = [];
    for (let i = 0; i < 7; i++) paidDecisions.push(await paid.check(subscribers, as(PAID)));
    expect(paidDecisions.map((d) => d.status)).toEqual([200, 200, 200, 200, 200, 200, 429]);
    expect(paidDecisions[0]!.headers["RateLimit-Policy"]).toBe('"general";q=600;w=60, "audience";q=6;w=60');
  });

  it("a window size in the plan: w= in RateLimit-Policy, the reset and Retry-After follow it", async () => {
    const r = runner(way);
    const slow: Limits = { budgets: { audience: { limit: 1, window: 300 } } };
    const first = await r.check(subscribers, as(slow));
    expect(first.headers).toMatchObject({ "RateLimit-Policy": '"general";q=600;w=60, "audience";q=1;w=300', "RateLimit-Reset": "300" });
    r.advance(100);
    const refused = await r.check(subscribers, as(slow));
    expect(refused.status).toBe(429);
    expect(refused.headers["Retry-After"]).toBe("200");
    expect(refused.body?.error.message).toContain("(1 requests per 300 seconds)");
  });

  it("the daily caps of the plan: a free plan's third send of the day is refused, naming its limit", async () => {
    const r = runner(way);
    const decisions = [];
    for (let i = 0; i < 3; i++) decisions.push(await r.check(send(`a_${i}`), as(FREE)));
    expect(decisions.map((d) => d.status)).toEqual([200, 200, 429]);
    expect(decisions[2]!.body?.error.message).toContain("daily dispatch limit of 2 sends");
    expect(decisions[2]!.reason).toMatchObject({ rule: "daily_cap", cap: "dispatch", limit: 2, count: 2 });
    const tests = [];
    for (let i = 0; i < 3; i++) tests.push(await r.check(post("/articles/a_1/test-send", { newsletter: "nl_1", body: { to: ["a@example.com"] } }), as(FREE)));
    expect(tests.map((d) => d.status)).toEqual([200, 200, 429]);
  });

  it("the dispatch cap counts per newsletter across credentials; each request is checked against its own who.limits", async () => {
    const r = runner(way);
    expect((await r.check(send("a_1"), as(FREE))).status).toBe(200);
    expect((await r.check(send("a_2"), as(FREE))).status).toBe(200);
    expect((await r.check(send("a_3"), as(FREE))).status).toBe(429); // 2 of the free plan's 2
    expect((await r.check(send("a_4"), as(PAID, other))).status).toBe(200); // 3 of the paid plan's 4
    expect((await r.check(send("a_5"), as(PAID, other))).status).toBe(200);
    const fifth = await r.check(send("a_6"), as(PAID, other));
    expect(fifth.status).toBe(429);
    expect(fifth.reason).toMatchObject({ rule: "daily_cap", limit: 4, count: 4 });
  });

  it("a plan change takes effect on the next request and keeps the current window's count", async () => {
    const r = runner(way);
    await r.check(subscribers, as(FREE));
    await r.check(subscribers, as(FREE)); // 2 of 3
    r.advance(10);
    const upgraded = await r.check(subscribers, as(PAID)); // 3 of 6, same window
    expect(upgraded.headers).toMatchObject({ "RateLimit-Limit": "6", "RateLimit-Remaining": "3", "RateLimit-Reset": "50" });
    await r.check(subscribers, as(PAID)); // 4
    const downgraded = await r.check(subscribers, as(FREE)); // 4 ≥ 3: spent until the window ends
    expect(downgraded.status).toBe(429);
    expect(downgraded.headers).toMatchObject({ "RateLimit-Limit": "3", "RateLimit-Remaining": "0", "Retry-After": "50" });
    r.advance(50);
    expect((await r.check(subscribers, as(FREE))).headers).toMatchObject({ "RateLimit-Remaining": "2", "RateLimit-Reset": "60" });
  });

  it("a window that grows keeps its start and count and ends at start + the new size", async () => {
    const r = runner(way);
    const small: Limits = { budgets: { audience: { limit: 5, window: 60 } } };
    const large: Limits = { budgets: { audience: { limit: 5, window: 600 } } };
    await r.check(subscribers, as(small));
    r.advance(50);
    const grown = await r.check(subscribers, as(large)); // 2 of 5, started 50 s ago: ends in 550 s
    expect(grown.headers).toMatchObject({ "RateLimit-Remaining": "3", "RateLimit-Reset": "550" });
    r.advance(100); // past the old end (60 s): the window is still open under its new size
    expect((await r.check(subscribers, as(large))).headers).toMatchObject({ "RateLimit-Remaining": "2", "RateLimit-Reset": "450" });
  });

  it("a window that ended under the size it was last charged with never reopens when a plan grows it (regression: found by the per-plan differential)", async () => {
    const r = runner(way);
    const small: Limits = { budgets: { audience: { limit: 2, window: 60 } } };
    const large: Limits = { budgets: { audience: { limit: 2, window: 600 } } };
    await r.check(subscribers, as(small));
    await r.check(subscribers, as(small)); // spent until 60 s
    r.advance(65); // ended under its 60 s size; the store may still hold it
    const fresh = await r.check(subscribers, as(large)); // a new window of 600 s, not the old one (2 of 2) reopened
    expect(fresh.status).toBe(200);
    expect(fresh.headers).toMatchObject({ "RateLimit-Remaining": "1", "RateLimit-Reset": "600" });
  });

  it("a window that shrinks keeps its end: a smaller size does not end it early (it did, so that two plans in turn ended the larger window every time; found by a config review)", async () => {
    const r = runner(way);
    const large: Limits = { budgets: { audience: { limit: 2, window: 600 } } };
    const small: Limits = { budgets: { audience: { limit: 2, window: 30 } } };
    await r.check(subscribers, as(large));
    await r.check(subscribers, as(large)); // spent for 600 s
    r.advance(20);
    const stillOpen = await r.check(subscribers, as(small)); // started 20 s ago: spent until 600 s
    expect(stillOpen.status).toBe(429);
    expect(stillOpen.headers["Retry-After"]).toBe("580");
    r.advance(20); // 40 s since the start: past the small size, not past the window's own end
    expect((await r.check(subscribers, as(small))).headers).toMatchObject({ "Retry-After": "560", "RateLimit-Remaining": "0" });
    r.advance(560); // the window's end: a new window, of the size it is charged with
    expect((await r.check(subscribers, as(small))).headers).toMatchObject({ "RateLimit-Remaining": "1", "RateLimit-Reset": "30" });
  });

  it("spec §8 RateLimit-Reset and Retry-After of a refusal under a plan with a longer window tell the window's real end: a refusal does not grow it (they said 3590 s of a window that ended 50 s later, when the request was allowed; found by an operating review)", async () => {
    const r = runner(way);
    const minute: Limits = { budgets: { audience: { limit: 2, window: 60 } } };
    const hour: Limits = { budgets: { audience: { limit: 1, window: 3_600 } } };
    await r.check(subscribers, as(minute));
    await r.check(subscribers, as(minute)); // spent; the window ends at 60 s
    r.advance(10);
    const refused = await r.check(subscribers, as(hour)); // spent by the hour's limit too, and not charged
    expect(refused.status).toBe(429);
    expect(refused.headers).toMatchObject({ "Retry-After": "50", "RateLimit-Reset": "50", "RateLimit-Remaining": "0" });
    r.advance(49);
    expect((await r.check(subscribers, as(hour))).headers).toMatchObject({ "Retry-After": "1" });
    r.advance(1); // the window's end, as told: a new window, of the hour's size
    const next = await r.check(subscribers, as(hour));
    expect(next.status).toBe(200);
    expect(next.headers).toMatchObject({ "RateLimit-Remaining": "0", "RateLimit-Reset": "3600" });
  });

  it("DESIGN §3: a window stamped more than a window ahead (a clock 2 h behind), refused under a longer plan, tells the same Retry-After in every store (Redis told the stored size's 60 s; found by a diff review)", async () => {
    const r = runner(way);
    await r.check(subscribers, as({ budgets: { audience: { limit: 1, window: 60 } } }));
    r.advance(-7_200);
    const refused = await r.check(subscribers, as({ budgets: { audience: { limit: 1, window: 3_600 } } }));
    expect(refused.status).toBe(429);
    expect(refused.headers).toMatchObject({ "Retry-After": "3600", "RateLimit-Reset": "3600" });
  });

  it("DESIGN §4: a window stamped more than a window ahead, charged under a shorter plan, tells the same RateLimit-Reset in every store, and status agrees (Redis told the stored hour; found by a review)", async () => {
    const r = runner(way);
    r.advance(7_200);
    await r.check(subscribers, as({ budgets: { audience: { limit: 5, window: 3_600 } } })); // opened 2 h ahead, an hour's window
    r.advance(-7_200);
    const charged = await r.check(subscribers, as()); // the config's 60 s window
    expect(charged.status).toBe(200);
    expect(charged.headers).toMatchObject({ "RateLimit-Reset": "60" });
  });

  it("a window a charge grows tells its new end (the charge makes it start + the larger size)", async () => {
    const r = runner(way);
    await r.check(subscribers, as({ budgets: { audience: { limit: 5, window: 60 } } }));
    r.advance(10);
    const grown = await r.check(subscribers, as({ budgets: { audience: { limit: 5, window: 600 } } }));
    expect(grown.headers).toMatchObject({ "RateLimit-Remaining": "3", "RateLimit-Reset": "590" });
  });

  it("spec §8 budgets per credential: two plans passed in turn for one credential, an hour's window and a second's: at most the hour's limit a window (594 of a plan of 100 were admitted in 10 s; found by a config review)", async () => {
    const r = runner(way);
    const hour: Limits = { budgets: { audience: { limit: 100, window: 3_600 } } };
    const second: Limits = { budgets: { audience: { limit: 1, window: 1 } } };
    let allowed = 0;
    for (let s = 0; s < 10; s++) {
      if ((await r.check(subscribers, as(second))).allowed) allowed++;
      for (let i = 0; i < 150; i++) if ((await r.check(subscribers, as(hour))).allowed) allowed++;
      r.advance(1);
    }
    expect(allowed).toBe(100);
  });
});

describe("who.limits is host input: validated like the config, a mistake throws PolicyConfigError naming the field", () => {
  const cases: [unknown, string][] = [
    [{ budgets: { audience: { limit: 0 } } }, "budgets.audience.limit"],
    [{ budgets: { audience: { window: 1.5 } } }, "budgets.audience.window"],
    [{ budgets: { audience: { limt: 5 } } }, "budgets.audience.limt"],
    [{ budgets: { reads: { limit: 5 } } }, "budgets.reads"],
    [{ caps: { dispatch: { limit: -1 } } }, "caps.dispatch.limit"],
    [{ caps: { sends: { limit: 1 } } }, "caps.sends"],
    [{ budget: {} }, "budget"],
    ["paid", ""],
    // a window past ten years: Redis could not keep its end and charged before failing (found by an operating review)
    [{ budgets: { audience: { window: 1e14 } } }, "budgets.audience.window"],
    [{ budgets: { audience: { window: 315_360_001 } } }, "budgets.audience.window"],
  ];
  it.each(cases)("%j → who.limits.%s (check), limits.… (evaluate)", async (limits, field) => {
    const policy = createPolicy({ clock: () => T0 });
    const thrown = await policy.check(subscribers, { ...as(), limits: limits as Limits }).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(PolicyConfigError);
    expect((thrown as PolicyConfigError).field).toBe(field === "" ? "who.limits" : `who.limits.${field}`);
    expect(() => evaluate(subscribers, { ...as(), limits: limits as Limits, usage: emptyUsage(), now: T0 })).toThrow(
      expect.objectContaining({ field: field === "" ? "limits" : `limits.${field}` }),
    );
  });

  it("what the host's limits object throws as it is read (a getter, a Proxy's trap, a revoked Proxy) is a PolicyConfigError naming who.limits (found by an operating review)", async () => {
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    const throwing: unknown[] = [
      {
        get budgets(): never {
          throw new Error("getter");
        },
      },
      new Proxy(
        {},
        {
          ownKeys: () => {
            throw new Error("trap");
          },
        },
      ),
      { budgets: revoked.proxy },
      revoked.proxy,
    ];
    const policy = createPolicy({ clock: () => T0 });
    for (const limits of throwing) {
      const thrown = await policy.check(subscribers, { ...as(), limits: limits as Limits }).catch((e: unknown) => e);
      expect(thrown).toBeInstanceOf(PolicyConfigError);
      expect((thrown as PolicyConfigError).field).toMatch(/^who\.limits/);
      expect(() => evaluate(subscribers, { ...as(), limits: limits as Limits, usage: emptyUsage(), now: T0 })).toThrow(PolicyConfigError);
    }
  });

  it("a window of ten years is accepted, in limits and in the config; one second more is not", () => {
    const policy = createPolicy({ clock: () => T0 });
    expect(() => policy.check(subscribers, as({ budgets: { audience: { window: 315_360_000 } } }))).not.toThrow();
    expect(() => createPolicy({ config: { budgets: { audience: { limit: 5, window: 315_360_001 } } } })).toThrow(expect.objectContaining({ field: "budgets.audience.window" }));
  });

  it("status() options are checked too: a misspelt limits would show the config's numbers while check enforced the plan's (found by an operating review)", async () => {
    const policy = createPolicy({ clock: () => T0 });
    for (const options of [{ limts: { budgets: { audience: { limit: 240 } } } }, { Limits: {} }, "paid", null]) {
      await expect(policy.status(as().credential, options as never)).rejects.toThrow(PolicyConfigError);
    }
    expect((await policy.status(as().credential, { limits: { budgets: { audience: { limit: 240 } } } })).budgets.audience?.limit).toBe(240);
  });

  it("a limits object is validated once and remembered by identity (the hot path does not re-read it)", async () => {
    let reads = 0;
    const counted = {
      get budgets() {
        reads++;
        return { audience: { limit: 100 } };
      },
    };
    const policy = createPolicy({ clock: () => T0 });
    for (let i = 0; i < 50; i++) await policy.check(subscribers, as(counted));
    expect(reads).toBe(1);
  });

  it("equal limits in fresh objects decide alike (each is validated; the compiled config is shared)", async () => {
    const policy = createPolicy({ clock: () => T0 });
    const a = await policy.check(subscribers, as({ budgets: { audience: { limit: 7 } } }));
    const b = await policy.check(subscribers, as({ budgets: { audience: { limit: 7 } } }));
    expect(a.headers["RateLimit-Policy"]).toBe(b.headers["RateLimit-Policy"]);
    expect(b.headers["RateLimit-Remaining"]).toBe("5");
  });

  it("limits in fresh objects that differ in one number only (the test-send cap) never share a compiled config: each plan's cap counts (a mutant that left testSend out of the shared key admitted 3 of 2; found by a mutation review)", () => {
    const testSend = (i: number) => post(`/articles/a_${i}/test-send`, { newsletter: "nl_1", body: { to: ["x@example.com"] } });
    const state = (limits: Limits, usage = emptyUsage()) => ({ credential, roles: { nl_1: "owner" }, usage, now: T0, limits });
    evaluate(testSend(0), state({ caps: { testSend: { limit: 100 } } }));
    const spellings: Limits[] = [{ caps: { testSend: { limit: 2 } } }, { caps: { dispatch: { limit: 25 }, testSend: { limit: 2 } } }];
    for (const limits of spellings) {
      let usage = emptyUsage();
      const statuses: number[] = [];
      for (let i = 1; i <= 3; i++) {
        const r = evaluate(testSend(i), state({ ...limits }, usage));
        usage = r.usage;
        statuses.push(r.decision.status);
      }
      expect(statuses).toEqual([200, 200, 429]);
    }
    // and the budgets: two plans differing in one budget's window only
    const a = evaluate(subscribers, state({ budgets: { audience: { limit: 5, window: 60 } } }));
    const b = evaluate(subscribers, state({ budgets: { audience: { limit: 5, window: 120 } } }));
    expect([a.decision.headers["RateLimit-Policy"], b.decision.headers["RateLimit-Policy"]]).toEqual(['"general";q=600;w=60, "audience";q=5;w=60', '"general";q=600;w=60, "audience";q=5;w=120']);
  });
});

describe("RedisStore keeps a grown window as long as its new size", () => {
  it("after a charge under a larger window, the key's PTTL covers start + the new size (not the old one); a smaller size keeps it", async () => {
    const { prefix, redis } = redisPrefix();
    const now = Date.now();
    const policy = createPolicy({ store: redisStore(prefix), clock: () => now });
    await policy.check(subscribers, as({ budgets: { audience: { window: 60 } } }));
    const [audience] = (await keysUnder(redis, prefix)).filter((k) => k.endsWith(":audience"));
    expect(await redis.pttl(audience!)).toBeLessThanOrEqual(70_000);
    await policy.check(subscribers, as({ budgets: { audience: { window: 600 } } }));
    expect(await redis.pttl(audience!)).toBeGreaterThan(500_000);
    await policy.check(subscribers, as({ budgets: { audience: { window: 30 } } })); // a smaller size keeps the window's end
    expect(await redis.pttl(audience!)).toBeGreaterThan(500_000);
  });

  it("a host ahead that changes a window's size keeps its key at least until the window ends by the opener's clock (found by a Redis drill: 30 s ahead, the key expired 15 s later and 5 more were admitted in the window)", async () => {
    const { prefix, redis } = redisPrefix();
    const real = Date.now();
    const store = redisStore(prefix);
    const opener = createPolicy({ store, clock: () => real });
    const ahead = createPolicy({ store, clock: () => real + 30_000 });
    for (let i = 0; i < 4; i++) expect((await opener.check(subscribers, as({ budgets: { audience: { limit: 5, window: 60 } } }))).allowed).toBe(true);
    expect((await ahead.check(subscribers, as({ budgets: { audience: { limit: 5, window: 35 } } }))).allowed).toBe(true);
    const [audience] = (await keysUnder(redis, prefix)).filter((k) => k.endsWith(":audience"));
    // the opener's window ends 35 s after it opened: the key must outlive that
    expect(await redis.pttl(audience!)).toBeGreaterThan(35_000);
  });
});

describe("status() (GET /rate-limit) gives the plan's numbers", () => {
  it.each(["MemoryStore", "RedisStore"] as const)("over %s: policy.status(credential, { limits })", async (way) => {
    let now = T0;
    const policy = createPolicy({ store: way === "MemoryStore" ? new MemoryStore() : redisStore(), clock: () => now });
    const d = await policy.check(subscribers, as(PAID));
    now += 15_000;
    const status = await policy.status(credential, { limits: PAID });
    expect(status.budgets.audience).toEqual({ limit: 6, remaining: 5, reset: 45 });
    expect(String(status.budgets.audience!.limit)).toBe(d.headers["RateLimit-Limit"]);
    // without limits: the config's numbers, the same count (backward compatible)
    expect((await policy.status(credential)).budgets.audience).toEqual({ limit: 60, remaining: 59, reset: 45 });
  });
});

describe("differential: random plan changes decide alike through evaluate, MemoryStore and RedisStore", () => {
  const plans: (Limits | undefined)[] = [undefined, FREE, PAID, { budgets: { audience: { limit: 2, window: 5 }, general: { limit: 8, window: 20 } } }, { budgets: { audience: { window: 120 } } }];
  const requests = [subscribers, get("/newsletters/nl_1/insights"), send("a_1"), post("/newsletters/nl_1/articles", { body: {} }), post("/articles/a_1/test-send", { newsletter: "nl_1", body: { to: ["a@example.com"] } })];
  const step = fc.record({ plan: fc.nat(plans.length - 1), request: fc.nat(requests.length - 1), advance: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 90 })) });

  it("every decision (status, headers, body, reason) is the same", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
        const ways = WAYS.map((way) => runner(way));
        for (const s of steps) {
          const decisions = [];
          for (const r of ways) {
            r.advance(s.advance);
            decisions.push(comparableDecision(await r.check(requests[s.request]!, as(plans[s.plan]))));
          }
          expect(decisions[1]).toEqual(decisions[0]);
          expect(decisions[2]).toEqual(decisions[0]);
        }
      }),
      { numRuns: 25, seed: 13 },
    );
  });
});
