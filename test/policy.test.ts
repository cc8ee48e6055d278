import { describe, expect, it, vi } from "vitest";
import { createPolicy, MemoryStore, type ChargeOutcome, type PolicyStore } from "../src/index.js";
import { T0, get, key, post } from "./fixtures.js";

const credential = key({ nl_1: { content: "write", audience: "read", sending: "write" } }, true);
const who = { credential, roles: { nl_1: "owner" } };

describe("createPolicy over a store", () => {
  it("check decides and charges; ids come from the injected generator", async () => {
    let n = 0;
    const policy = createPolicy({ store: new MemoryStore(), clock: () => T0, generateId: () => `id${++n}` });
    const d = await policy.check(get("/newsletters/nl_1/subscribers"), who);
    expect(d).toMatchObject({ allowed: true, status: 200, requestId: "req_id1", operation: "subscribers.list", view: "full" });
    expect(d.headers["RateLimit-Remaining"]).toBe("59");
  });

  it("DESIGN §10, §13: generateId's mistakes throw PolicyConfigError naming it (found by a black-box review: a CR LF reached request_id, a throw came back bare); an id with req_ is not prefixed twice", async () => {
    const store = new MemoryStore();
    const check = (generateId: () => unknown) => createPolicy({ store, clock: () => T0, generateId: generateId as () => string }).check(get("/newsletters/nl_1/subscribers"), who);
    for (const bad of ["req_\r\nSet-Cookie: a=b", "", "req_", "a b", "x".repeat(129)] as unknown[]) {
      await expect(check(() => bad), JSON.stringify(bad)).rejects.toMatchObject({ name: "PolicyConfigError", field: "generateId()" });
    }
    for (const bad of [42, null, undefined, {}]) await expect(check(() => bad)).rejects.toMatchObject({ field: "generateId()" });
    await expect(check(() => { throw new Error("no entropy"); })).rejects.toMatchObject({ field: "generateId()", message: expect.stringContaining("no entropy") });
    expect((await check(() => "req_abc")).requestId).toBe("req_abc");
    expect((await check(() => "a.b:c-d_e")).requestId).toBe("req_a.b:c-d_e");
    // the host's own id comes first, as before: the generator is not called
    const given = await createPolicy({ store, clock: () => T0, generateId: () => { throw new Error("not called"); } }).check(get("/newsletters/nl_1/subscribers", { requestId: "abc" }), who);
    expect(given.requestId).toBe("req_abc");
  });

  it("status gives the JSON for GET /rate-limit: the same numbers as the headers", async () => {
    let now = T0;
    const policy = createPolicy({ clock: () => now });
    const d = await policy.check(get("/newsletters/nl_1/subscribers"), who);
    now += 15_000;
    const status = await policy.status(credential);
    expect(status).toEqual({
      budgets: {
        general: { limit: 600, remaining: 599, reset: 45 },
        audience: { limit: 60, remaining: 59, reset: 45 },
        write: { limit: 60, remaining: 60, reset: 60 },
      },
    });
    expect(String(status.budgets.audience!.remaining)).toBe(d.headers["RateLimit-Remaining"]);
  });

  it("release uncounts a failed send once", async () => {
    const policy = createPolicy({ clock: () => T0, config: { caps: { dispatch: { limit: 1 } } } });
    const sent = await policy.check(post("/articles/a_1/send", { newsletter: "nl_1" }), who);
    expect(await policy.release(sent)).toBe(true);
    expect(await policy.release(sent)).toBe(false);
    expect(await policy.release({})).toBe(false);
    expect((await policy.check(post("/articles/a_2/send", { newsletter: "nl_1" }), who)).allowed).toBe(true);
    expect((await policy.check(post("/articles/a_3/send", { newsletter: "nl_1" }), who)).status).toBe(429);
  });

  const broken: PolicyStore = {
    charge: () => Promise.reject(new Error("ECONNREFUSED")),
    release: () => Promise.reject(new Error("ECONNREFUSED")),
    read: () => Promise.reject(new Error("ECONNREFUSED")),
  };

  it("DESIGN §12 a store failure answers service_unavailable (503); spec §7: every error response carries the four RateLimit-* headers", async () => {
    const onStoreError = vi.fn();
    const policy = createPolicy({ store: broken, clock: () => T0, onStoreError });
    const d = await policy.check(get("/newsletters/nl_1/subscribers"), who);
    expect(d.status).toBe(503);
    expect(d.body?.error.code).toBe("service_unavailable");
    // nothing could be counted: no request is known to be left, and the store may be back in 1 s
    expect(d.headers).toEqual({
      "RateLimit-Policy": '"general";q=600;w=60, "audience";q=60;w=60',
      "RateLimit-Limit": "600",
      "RateLimit-Remaining": "0",
      "RateLimit-Reset": "1",
    });
    expect(d.reason).toMatchObject({ rule: "store_unavailable", failOpen: false, error: "Error: ECONNREFUSED" });
    expect(onStoreError).toHaveBeenCalledWith(expect.any(Error), d);
  });

  it("DESIGN §12 a store answer that cannot be rendered (too few windows, NaN, an unknown kind) is a store failure: 503 with the headers, never a TypeError or NaN in a header", async () => {
    // found by a black-box review: a Redis reply that did not add up threw a TypeError out of check, or admitted with NaN
    const reading = { count: 1, resetAt: T0 + 60_000 };
    const answers: unknown[] = [
      { kind: "conflict", windows: [] },
      { kind: "charged", windows: [{ count: Number.NaN, resetAt: Number.NaN }, reading], replay: false },
      { kind: "charged", windows: [reading], replay: false },
      { kind: "charged", windows: [reading, reading] },
      { kind: "refused", windows: [reading, reading] },
      { kind: "cap_reached", windows: [reading, reading] },
      null,
    ];
    for (const answer of answers) {
      const store: PolicyStore = { charge: () => answer as never, release: () => false, read: () => [] };
      const d = await createPolicy({ store, clock: () => T0 }).check(get("/newsletters/nl_1/subscribers"), who);
      expect(d, JSON.stringify(answer)).toMatchObject({ status: 503, reason: { rule: "store_unavailable", failOpen: false } });
      for (const value of Object.values(d.headers)) expect(value).not.toMatch(/NaN/);
      const open = await createPolicy({ store, clock: () => T0, failOpen: true }).check(get("/newsletters/nl_1/subscribers"), who);
      expect(open).toMatchObject({ allowed: true, charged: { budgets: [] }, reason: { rule: "store_unavailable", failOpen: true } });
    }
    // the built-in MemoryStore's own charge is trusted unchecked: a subclass or an instance that replaces it is checked as any store is
    class Odd extends MemoryStore {
      override charge(): ChargeOutcome {
        return { kind: "charged", windows: [], replay: false };
      }
    }
    const patched = new MemoryStore();
    patched.charge = () => ({ kind: "refused", windows: [] }) as never;
    for (const store of [new Odd(), patched]) {
      const d = await createPolicy({ store, clock: () => T0 }).check(get("/newsletters/nl_1/subscribers"), who);
      expect(d).toMatchObject({ status: 503, reason: { rule: "store_unavailable", failOpen: false } });
    }
    // status, too: readings that do not add up reject as a store failure
    const short: PolicyStore = { charge: () => ({ kind: "budget_spent", windows: [] }), release: () => false, read: () => [{ count: 1, resetAt: T0 }] };
    await expect(createPolicy({ store: short, clock: () => T0 }).status(credential)).rejects.toThrow(/windows for 3 budgets/);
  });

  it("DESIGN §10: a host mistake rejects the promise check returns, it never throws from the call (check answers a synchronous store without an async function)", async () => {
    const policy = createPolicy({ clock: () => T0 });
    let returned: Promise<unknown> | undefined;
    expect(() => (returned = policy.check(get("/newsletters/nl_1/subscribers"), { credential: null as never, roles: {} }))).not.toThrow();
    await expect(returned).rejects.toThrow(/credential/);
    const clockless = createPolicy({ clock: () => Number.NaN });
    await expect(clockless.check(get("/newsletters/nl_1/subscribers"), who)).rejects.toThrow(/clock/);
    // a store that throws synchronously is a store failure (503), as one that rejects
    const throwing: PolicyStore = { charge: () => { throw new Error("down"); }, release: () => false, read: () => [] };
    expect(await createPolicy({ store: throwing, clock: () => T0 }).check(get("/newsletters/nl_1/subscribers"), who)).toMatchObject({ status: 503 });
  });

  it("failOpen lets the request through uncounted, with a reason to log", async () => {
    const policy = createPolicy({ store: broken, clock: () => T0, failOpen: true });
    const d = await policy.check(get("/newsletters/nl_1/subscribers"), who);
    expect(d).toMatchObject({ allowed: true, status: 200, charged: { budgets: [], caps: [] }, reason: { rule: "store_unavailable", failOpen: true } });
  });

  // Regression (found by a black-box audit): failing open skipped reach, permission and input
  // checks, so a store outage let through requests the plan had refused.
  it("DESIGN §12 failOpen skips counting, never a rule: reach (404), permission (403) and input (400) refusals stand, uncounted", async () => {
    const policy = createPolicy({ store: broken, clock: () => T0, failOpen: true });
    const stranger = { credential: key({}), roles: { nl_1: "owner" } };
    const reader = { credential: key({ nl_1: { content: "read" } }), roles: { nl_1: "owner" } };
    const cases = [
      [await policy.check(get("/newsletters/nl_1/subscribers"), stranger), 404, "not_found"],
      [await policy.check(post("/articles/a_1/send", { newsletter: "nl_1" }), reader), 403, "insufficient_scope"],
      [await policy.check(post("/articles/a_1/test-send", { newsletter: "nl_1", body: { to: ["a@x", "b@x", "c@x", "d@x", "e@x", "f@x"] } }), who), 400, "invalid_request"],
    ] as const;
    for (const [d, status, code] of cases) {
      expect(d).toMatchObject({ allowed: false, status, charged: { budgets: [], caps: [] } });
      expect(d.body?.error.code).toBe(code);
      expect(Object.keys(d.headers).sort()).toEqual(["RateLimit-Limit", "RateLimit-Policy", "RateLimit-Remaining", "RateLimit-Reset"]);
    }
  });

  it("DESIGN §1 route comes before budgets: with the store down, a malformed or unknown request still gets its 400 or 404", async () => {
    const policy = createPolicy({ store: broken, clock: () => T0 });
    expect((await policy.check(get("/newsletters/nl_1/nothing"), who)).status).toBe(404);
    expect((await policy.check(get("/newsletters/../me"), who)).status).toBe(400);
  });

  it("a store that throws synchronously is handled like one that rejects", async () => {
    const store: PolicyStore = { ...broken, charge: () => { throw new Error("boom"); } };
    expect((await createPolicy({ store, clock: () => T0 }).check(get("/me"), who)).status).toBe(503);
  });
});

describe("MemoryStore keeps its memory bounded as credentials come and go", () => {
  it("forgets expired windows, past days' caps and idempotency records", async () => {
    let now = T0;
    const store = new MemoryStore();
    const policy = createPolicy({ store, clock: () => now });
    for (let i = 0; i < 500; i++) {
      const c = key({ nl_1: { sending: "write" } }, false, `key_${i}`);
      await policy.check(post("/articles/a/send", { newsletter: "nl_1", idempotencyKey: `k${i}` }), { credential: c, roles: { nl_1: "owner" } });
      await policy.check(post(`/articles/a/test-send`, { newsletter: "nl_1", body: { to: ["a@x.io"] } }), { credential: c, roles: { nl_1: "owner" } });
    }
    expect(store.size).toBeGreaterThan(1000);
    now += 25 * 3600_000;
    store.sweep(now);
    // windows and idempotency records are gone; a past day's cap is kept a week for late releases
    expect(store.size).toBe(501); // 500 test-send caps (per credential) and one dispatch cap (per newsletter)
    now += 7 * 24 * 3600_000;
    store.sweep(now);
    expect(store.size).toBe(0);
  });

  it("forgets expired entries by itself, a few on every charge (no sweep call)", async () => {
    let now = T0;
    const store = new MemoryStore({ expirePerCall: 4 });
    const policy = createPolicy({ store, clock: () => now });
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 100; i++) await policy.check(get("/me"), { credential: key({}, true, `r${round}_${i}`), roles: {} });
      now += 61_000;
    }
    expect(store.size).toBeLessThanOrEqual(100);
  });
});
