/**
 * Issue 8, defects 1 and 2: clock steps and clock range. Each test is named after the defect it
 * keeps fixed and runs through both `evaluate` and `createPolicy` over a MemoryStore.
 */
import { describe, expect, it } from "vitest";
import { createPolicy, emptyUsage, evaluate, MemoryStore, PolicyConfigError, prune, release, type Decision } from "../../src/index.js";
import { key, post, get } from "../fixtures.js";
import { drivers, pureDriver, storeDriver } from "./drivers.js";

const DAY = 86_400_000;
/** Midnight UTC starting 2026-11-23. */
const MIDNIGHT = Date.UTC(2026, 10, 23);
const sender = key({ nl_1: { sending: "write", content: "write" } });
const roles = { nl_1: "owner" };
const send = (i: number) => post(`/articles/a_${i}/send`, { newsletter: "nl_1" });

async function sendMany(check: (r: unknown, now: number) => Promise<Decision>, n: number, now: number, from = 0): Promise<Decision[]> {
  const out: Decision[] = [];
  for (let i = 0; i < n; i++) out.push(await check(send(from + i), now + i));
  return out;
}

describe("issue 8 defect 1: clock steps (caps keyed by day, windows never start after now)", () => {
  for (const { name, make } of drivers(sender, roles)) {
    it(`a −2 s clock step across midnight does not let 50 dispatches through on one day with cap 25 (${name})`, async () => {
      const driver = make();
      // the new day: 24 sends
      const first = await sendMany(driver.check, 24, MIDNIGHT + 1000);
      expect(first.every((d) => d.allowed)).toBe(true);
      // the clock steps back 2 s, to the day before: one send counts toward that day
      const back = await driver.check(send(100), MIDNIGHT - 1000);
      expect(back.allowed).toBe(true);
      // the clock is right again: the new day has room for one more only
      const again = await sendMany(driver.check, 25, MIDNIGHT + 2000, 200);
      expect(again.filter((d) => d.allowed)).toHaveLength(1);
      expect(again.slice(1).every((d) => d.status === 429 && d.reason.rule === "daily_cap")).toBe(true);
    });

    it(`a request stamped two days ahead does not wipe today's full count (${name})`, async () => {
      const driver = make();
      const today = MIDNIGHT + 10 * 3600_000;
      const full = await sendMany(driver.check, 26, today);
      expect(full.filter((d) => d.allowed)).toHaveLength(25);
      expect((await driver.check(send(100), today + 2 * DAY)).allowed).toBe(true);
      const after = await sendMany(driver.check, 25, today + 60_000, 200);
      expect(after.filter((d) => d.allowed)).toHaveLength(0);
    });

    it(`one request stamped three days ahead does not lock the credential out for days (${name})`, async () => {
      const driver = make();
      const today = MIDNIGHT + 10 * 3600_000;
      expect((await driver.check(get("/rate-limit"), today + 3 * DAY)).allowed).toBe(true);
      let refused: Decision | undefined;
      for (let i = 0; i < 700 && refused === undefined; i++) {
        const d = await driver.check(get("/rate-limit"), today + i);
        if (!d.allowed) refused = d;
      }
      expect(refused?.status).toBe(429);
      expect(Number(refused!.headers["Retry-After"])).toBeLessThanOrEqual(60);
      expect(Number(refused!.headers["RateLimit-Reset"])).toBeLessThanOrEqual(60);
      // and one window later the budget is open again
      expect((await driver.check(get("/rate-limit"), today + 61_000)).allowed).toBe(true);
    });

    it(`a clock stepped back one hour inside a window: Retry-After and RateLimit-Reset never longer than the window (${name})`, async () => {
      const driver = make();
      const t = MIDNIGHT + 10 * 3600_000;
      for (let i = 0; i < 600; i++) expect((await driver.check(get("/rate-limit"), t)).allowed).toBe(true);
      const refused = await driver.check(get("/rate-limit"), t - 3600_000);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers["Retry-After"])).toBeLessThanOrEqual(60);
      expect(Number(refused.headers["RateLimit-Reset"])).toBeLessThanOrEqual(60);
      expect(Number(refused.headers["Retry-After"])).toBeGreaterThan(0);
    });
  }

  it("a release uncounts its own day's charge whatever day was charged since: stamps 10 s either side of midnight in turn (a stamp before midnight between two releases made the new day's release uncount nothing: 200, 429; found by a Redis drill)", () => {
    const config = { caps: { dispatch: { limit: 2 } } };
    const keyed = (i: number) => ({ ...send(i), idempotencyKey: `send-${i}` });
    let usage = emptyUsage();
    const decide = (i: number, now: number) => {
      const r = evaluate(keyed(i), { credential: sender, roles, usage, now, config });
      usage = r.usage;
      return r.decision;
    };
    const unsend = (d: Decision, now: number) => {
      const next = release(usage, d, now);
      const uncounted = next !== usage;
      usage = next;
      return uncounted;
    };
    const before = MIDNIGHT - 10_000;
    const after = MIDNIGHT + 10_000;
    const a1 = decide(1, before);
    const b1 = decide(2, after);
    expect(unsend(a1, before)).toBe(true);
    expect(decide(3, before).allowed).toBe(true);
    expect(unsend(b1, after)).toBe(true);
    expect([decide(4, after).status, decide(5, after).status]).toEqual([200, 200]);
    // the released send's retry runs again, counted (a replay would count no cap)
    expect(decide(1, before)).toMatchObject({ allowed: true, charged: { caps: ["dispatch"] } });
  });
});

describe("spec §8 daily caps: a day's cap count outlives the changes after midnight: a clock stepped back finds it (found by a clock drill: the pure snapshot forgot the day once two changes were past its end, and 50 dispatches went through a cap of 25)", () => {
  it("25 sends at 23:59:50, other newsletters' traffic at 00:00:02 sweeping every bucket, then the clock steps back: the 26th send of that day is refused, on every driver", async () => {
    const many = key(Object.fromEntries(Array.from({ length: 41 }, (_, i) => [`nl_${i}`, { sending: "write" as const }])));
    const everywhere = Object.fromEntries(Array.from({ length: 41 }, (_, i) => [`nl_${i}`, "owner"]));
    for (const { name, make } of drivers(many, everywhere)) {
      const driver = make();
      const to = (nl: number, i: number, now: number) => driver.check(post(`/articles/a_${nl}_${i}/send`, { newsletter: `nl_${nl}` }), now);
      const before = MIDNIGHT - 10_000;
      for (let i = 0; i < 25; i++) expect((await to(0, i, before)).status, name).toBe(200);
      // 1 000 changes past midnight (a minute per newsletter: the write budget's 60 a minute): the
      // sweep (a leaf a change, the 256 buckets in turn) passes every leaf
      for (let nl = 1; nl <= 40; nl++) for (let i = 0; i < 25; i++) await to(nl, i, MIDNIGHT + 2000 + (nl - 1) * 60_000);
      const back = await to(0, 99, MIDNIGHT - 1000);
      expect([back.status, back.reason.rule], name).toEqual([429, "daily_cap"]);
    }
  }, 60_000);
});

describe("issue 8 defect 2: clock range (only times a Date can hold)", () => {
  const who = { credential: key({}, true), roles: {} };
  const bad = [1e22, -1e22, 8.64e15 + 1, Number.MAX_VALUE, Infinity, NaN, "1000", 10n] as unknown[];

  it("now = 1e22 is a host error, not budgets switched off: evaluate throws PolicyConfigError naming now", () => {
    for (const now of bad) {
      expect(() => evaluate(get("/rate-limit"), { ...who, usage: emptyUsage(), now: now as number }), String(now)).toThrow(PolicyConfigError);
      expect(() => evaluate(get("/rate-limit"), { ...who, usage: emptyUsage(), now: now as number })).toThrow(/now/);
    }
  });

  it("release with a now out of range throws PolicyConfigError naming now", () => {
    const { decision, usage } = evaluate(post("/articles/a/send", { newsletter: "nl_1" }), { credential: sender, roles, usage: emptyUsage(), now: MIDNIGHT });
    for (const now of bad) expect(() => release(usage, decision, now as number)).toThrow(/now/);
  });

  it("a clock() out of range is a host error in check, release and status, naming clock()", async () => {
    for (const t of bad) {
      const policy = createPolicy({ store: new MemoryStore(), clock: () => t as number });
      await expect(policy.check(get("/rate-limit"), who)).rejects.toThrow(PolicyConfigError);
      await expect(policy.check(get("/rate-limit"), who)).rejects.toThrow(/clock\(\)/);
      await expect(policy.status(who.credential)).rejects.toThrow(/clock\(\)/);
      const allowed = await createPolicy({ clock: () => MIDNIGHT }).check(post("/articles/a/send", { newsletter: "nl_1" }), { credential: sender, roles });
      await expect(policy.release(allowed)).rejects.toThrow(/clock\(\)/);
    }
  });

  it("a clock() that throws is a host error too: PolicyConfigError naming clock(), the host's error its cause (it came back bare; found by a hostile-input drill)", async () => {
    const failure = new Error("clock source down");
    const policy = createPolicy({ store: new MemoryStore(), clock: () => { throw failure; } });
    for (const call of [() => policy.check(get("/rate-limit"), who), () => policy.status(who.credential)]) {
      const error = await call().then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(PolicyConfigError);
      expect(error).toMatchObject({ field: "clock()", cause: failure });
      expect((error as Error).message).toContain("clock source down");
    }
    // whatever it throws: an object with no way to become text, an Error whose message getter throws (diff review)
    const odd = [Object.create(null), Object.defineProperty(new Error(), "message", { get: () => { throw new Error("no message"); } }), undefined, Symbol("s")];
    for (const thrown of odd) {
      const error = await createPolicy({ clock: () => { throw thrown; } }).check(get("/rate-limit"), who).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(PolicyConfigError);
      expect(error).toMatchObject({ field: "clock()" });
      expect((error as { cause?: unknown }).cause).toBe(thrown);
    }
  });

  it("the whole range a Date holds is accepted, fractions and times before 1970 included, and budgets still count there", () => {
    for (const now of [8.64e15 - 120_000, -8.64e15, 0, -1, 1.5, MIDNIGHT + 0.25]) {
      let usage = emptyUsage();
      const decisions: Decision[] = [];
      for (let i = 0; i < 601; i++) {
        const r = evaluate(get("/rate-limit"), { ...who, usage, now });
        usage = r.usage;
        decisions.push(r.decision);
      }
      expect(decisions.filter((d) => d.allowed), String(now)).toHaveLength(600);
    }
  });
});

describe("issue 8 defect 1, as a property: any clock steps, back or ahead", () => {
  it("never more than the cap per day, never a reset longer than the window, and evaluate ≡ MemoryStore", async () => {
    const { default: fc } = await import("fast-check");
    const { DEEP, SEED } = await import("../properties/settings.js");
    const step = fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom("send", "get") },
      { weight: 3, arbitrary: fc.integer({ min: -3 * DAY, max: 3 * DAY }) },
      { weight: 3, arbitrary: fc.integer({ min: -5_000, max: 5_000 }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 120 }), async (steps) => {
        const [pure, store] = drivers(sender, roles).map((d) => d.make());
        let now = MIDNIGHT - 30_000;
        const perDay = new Map<number, number>();
        let i = 0;
        for (const s of steps) {
          if (typeof s === "number") {
            now += s;
            continue;
          }
          const request = s === "send" ? send(i++) : get("/rate-limit");
          const a = await pure!.check(request, now);
          const b = await store!.check(request, now);
          expect({ ...b, requestId: "", release: b.release && { ...b.release, member: "" } }).toEqual({ ...a, requestId: "", release: a.release && { ...a.release, member: "" } });
          if (s === "send" && a.allowed) {
            const day = Math.floor(now / DAY);
            perDay.set(day, (perDay.get(day) ?? 0) + 1);
            expect(perDay.get(day)).toBeLessThanOrEqual(25);
          }
          if (a.status === 429 && a.reason.rule === "budget_spent") expect(Number(a.headers["Retry-After"])).toBeLessThanOrEqual(60);
          expect(Number(a.headers["RateLimit-Reset"])).toBeLessThanOrEqual(60);
        }
      }),
      { seed: SEED, numRuns: DEEP ? 2000 : 80 },
    );
  }, 600_000);
});

describe("spec §8 rate-limit budgets under a clock that steps: a window stamped ahead never wipes a spent one (found by a clock drill: one read stamped a day ahead replaced a spent window, 5 reads in a minute on a budget of 3, and a clock flapping between now and a day ahead let 50 reads of 50 through)", () => {
  const reader = key({ nl_1: { audience: "read" } });
  const W = 60_000;
  const config = { budgets: { audience: { limit: 3, window: 60 } } };
  const read = get("/newsletters/nl_1/subscribers");
  const T = MIDNIGHT + 10 * 3600_000;

  for (const { name, make } of drivers(reader, roles, config)) {
    it(`3 reads spend the window; one read stamped a day ahead; back at the right time the window is still spent, and opens one window after it did (${name})`, async () => {
      const driver = make();
      for (let i = 0; i < 3; i++) expect((await driver.check(read, T + i)).status).toBe(200);
      expect((await driver.check(read, T + 5)).status).toBe(429);
      expect((await driver.check(read, T + DAY)).status).toBe(200);
      const back = await driver.check(read, T + 1000);
      expect([back.status, back.reason.rule]).toEqual([429, "budget_spent"]);
      // what the headers say is the spent window's: it ends 59 s from now
      expect(back.headers["RateLimit-Remaining"]).toBe("0");
      expect(Number(back.headers["Retry-After"])).toBe(59);
      expect((await driver.check(read, T + 2000)).status).toBe(429);
      // the spent window ends at T + 60 s by this clock
      expect((await driver.check(read, T + W)).status).toBe(200);
    });

    it(`a clock flapping between T + i·100 ms and a day ahead: each clock fills its own window of 3, 6 of 50 in all (${name})`, async () => {
      const driver = make();
      const statuses: number[] = [];
      for (let i = 0; i < 50; i++) statuses.push((await driver.check(read, (i % 2 === 0 ? T : T + DAY) + i * 100)).status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(6);
      expect(statuses.filter((s, i) => s === 200 && i % 2 === 0)).toHaveLength(3);
    });

    it(`a read stamped back inside the earlier window counts there: its count goes up, the current window's stays (${name})`, async () => {
      const driver = make();
      expect((await driver.check(read, T)).status).toBe(200);
      // a day ahead: a new window, the one at T kept as the earlier one (1 counted)
      for (let i = 0; i < 3; i++) expect((await driver.check(read, T + DAY + i)).status).toBe(200);
      expect((await driver.check(read, T + DAY + 10)).status).toBe(429);
      // back at T + 1 s: the earlier window has room for 2
      const back = await driver.check(read, T + 1000);
      expect(back.status).toBe(200);
      expect(back.headers["RateLimit-Remaining"]).toBe("1");
      expect((await driver.check(read, T + 1001)).status).toBe(200);
      expect((await driver.check(read, T + 1002)).status).toBe(429);
      // the window a day ahead is still spent
      expect((await driver.check(read, T + DAY + 20)).status).toBe(429);
    });
  }

  it("the window ahead, kept beside a window a clock stepped back opened, is not forgotten when that one ends: prune and MemoryStore.sweep keep it, and its clock still finds it spent", async () => {
    const pure = pureDriver(reader, roles, config);
    const store = storeDriver(reader, roles, new MemoryStore(), config);
    for (const driver of [pure, store]) {
      expect((await driver.check(read, T + DAY)).status).toBe(200);
      // back a day: a window of its own, counting from the one ahead (1), which is kept beside it
      expect((await driver.check(read, T)).status).toBe(200);
      expect((await driver.check(read, T + DAY + 1)).status).toBe(200);
      expect((await driver.check(read, T + DAY + 2)).status).toBe(200);
      expect((await driver.check(read, T + DAY + 3)).status).toBe(429);
    }
    // the window at T has ended by T + 2 windows; the one a day ahead has not
    pure.usage = prune(pure.usage, T + 2 * W);
    store.store.sweep(T + 2 * W);
    store.store.sweep(T + 2 * W);
    for (const driver of [pure, store]) {
      const ahead = await driver.check(read, T + DAY + 4);
      expect([ahead.status, ahead.reason.rule], driver.name).toEqual([429, "budget_spent"]);
    }
  });

});

describe("spec §8 budgets: two calls stamped a day ahead do not let MemoryStore forget the spent window it then reads (found by a review: it forgot the window before the second call read it, and back at the right time admitted 5 in a minute on a budget of 3, where evaluate admitted 3)", () => {
  const reader = key({ nl_1: { audience: "read" } });
  const other = key({ nl_1: { audience: "read" } }, false, "key_2");
  const config = { budgets: { audience: { limit: 3, window: 60 } } };
  const read = get("/newsletters/nl_1/subscribers");
  const T = MIDNIGHT + 10 * 3600_000;
  it.each([
    ["GET /rate-limit of the same credential (general only), then a read", (policy: ReturnType<typeof createPolicy>) => [
      () => policy.check(get("/rate-limit"), { credential: reader, roles }),
      () => policy.check(read, { credential: reader, roles }),
    ]],
    ["a read of another credential, then a read", (policy: ReturnType<typeof createPolicy>) => [
      () => policy.check(read, { credential: other, roles }),
      () => policy.check(read, { credential: reader, roles }),
    ]],
  ])("%s, a day ahead: back at the right time the spent window is still spent", async (_name, ahead) => {
    const store = new MemoryStore();
    const now = { t: T };
    const policy = createPolicy({ store, clock: () => now.t, config });
    for (let i = 0; i < 3; i++) expect((await policy.check(read, { credential: reader, roles })).status).toBe(200);
    const [first, second] = ahead(policy);
    now.t = T + DAY;
    await first!();
    now.t = T + DAY + 1;
    await second!();
    now.t = T + 1000;
    const back = await policy.check(read, { credential: reader, roles });
    expect([back.status, back.reason.rule]).toEqual([429, "budget_spent"]);
  });
});
