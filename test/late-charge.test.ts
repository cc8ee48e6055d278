/**
 * DESIGN §12 and spec §8 daily caps: a charge the store gave up on (it threw; the policy answered
 * without it) that the store then learns it made after all is handed back through
 * `ChargeRequest.late`, and the policy, which knows what it answered, undoes the cap place unless
 * it let the request through. (It was RedisStore's own rule, told by a store flag that createPolicy
 * set under failOpen or insurance; a custom store had no way to hand such a charge back.)
 */
import { describe, expect, it } from "vitest";
import { createPolicy, MemoryStore, type ChargeOutcome, type ChargeRequest, type PolicyStore, type RecordTicket } from "../src/index.js";
import { get, key, post, T0 } from "./fixtures.js";

const who = { credential: key({ nl_1: { sending: "write", audience: "read" } }), roles: { nl_1: "owner" } };
const config = { caps: { dispatch: { limit: 3 } } };

/** A MemoryStore whose next charge is made but answered with an error, its outcome handed to `late` afterwards. */
class LateStore implements PolicyStore {
  readonly inner = new MemoryStore();
  armed = false;
  readonly seen: ChargeRequest[] = [];
  delivered: Promise<void> = Promise.resolve();
  charge(request: ChargeRequest): ChargeOutcome {
    this.seen.push(request);
    const outcome = this.inner.charge(request);
    if (!this.armed) return outcome;
    this.armed = false;
    this.delivered = new Promise((resolve) =>
      setTimeout(() => {
        request.late?.(outcome);
        resolve();
      }, 5),
    );
    throw new Error("timed out (the reply comes later)");
  }
  release = (ticket: Parameters<PolicyStore["release"]>[0], now: number) => this.inner.release(ticket, now);
  read = (budgets: Parameters<PolicyStore["read"]>[0], now: number) => this.inner.read(budgets, now);
}

/** The same store, which can forget an idempotency record (PolicyStore.forget) as MemoryStore does. */
class ForgettingLateStore extends LateStore {
  readonly forgotten: boolean[] = [];
  forget = (record: RecordTicket, now: number) => {
    const gone = this.inner.forget(record, now);
    this.forgotten.push(gone);
    return gone;
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));
const send = (k: string) => post("/articles/a_1/send", { newsletter: "nl_1", idempotencyKey: k });

describe("DESIGN §12, spec §8 daily caps: a cap charge made after the store gave up is released by the policy that answered 503", () => {
  it("the 503'd send holds no place of the cap, and its retry under the same key is counted and run, not a replay", async () => {
    const store = new LateStore();
    const policy = createPolicy({ store, clock: () => T0, config });
    store.armed = true;
    const lost = await policy.check(send("k1"), who);
    expect([lost.status, lost.reason.rule]).toEqual([503, "store_unavailable"]);
    await store.delivered;
    await settle();
    const retry = await policy.check(send("k1"), who);
    expect([retry.status, retry.reason, retry.charged.caps]).toEqual([200, { rule: "allowed" }, ["dispatch"]]);
    expect((await policy.check(send("k2"), who)).status).toBe(200);
    expect((await policy.check(send("k3"), who)).status).toBe(200);
    expect((await policy.check(send("k4"), who)).reason.rule).toBe("daily_cap");
  });

  it.each([
    ["failOpen: true", { failOpen: true }],
    ["insurance", { insurance: { store: new MemoryStore(), share: 1 } }],
  ])("%s: the request was let through, so the late charge stays counted", async (_name, options) => {
    const store = new LateStore();
    const policy = createPolicy({ store, clock: () => T0, config, ...options });
    store.armed = true;
    // without a key: the insurance store answers keyed sends 503
    const through = await policy.check(post("/articles/a_1/send", { newsletter: "nl_1" }), who);
    expect(through.allowed).toBe(true);
    await store.delivered;
    await settle();
    expect((await policy.check(send("k2"), who)).status).toBe(200);
    expect((await policy.check(send("k3"), who)).status).toBe(200);
    expect((await policy.check(send("k4"), who)).reason.rule).toBe("daily_cap");
  });

  it("only a charge with a cap carries `late` (a read, a refused send and a write without a cap carry none)", async () => {
    const store = new LateStore();
    const policy = createPolicy({ store, clock: () => T0, config });
    await policy.check(get("/newsletters/nl_1/subscribers"), who);
    await policy.check(post("/articles/a_1/send", { newsletter: "nl_2" }), who);
    await policy.check(post("/newsletters/nl_1/articles", { body: {} }), who);
    await policy.check(send("k1"), who);
    expect(store.seen.map((r) => typeof r.late)).toEqual(["undefined", "undefined", "undefined", "function"]);
  });
});

describe("DESIGN §7, §12: a keyed write without a cap made after the store gave up: the policy that answered 503 has the store forget its record (PolicyStore.forget), so the retry runs instead of being answered as a replay of a write never made", () => {
  const write = (k: string, title = "t") => post("/newsletters/nl_1/articles", { idempotencyKey: k, body: { title } });
  const writer = { credential: key({ nl_1: { content: "write" } }), roles: { nl_1: "owner" } };

  it("the 503'd write's retry under the same key is run (not a replay), and counted once", async () => {
    const store = new ForgettingLateStore();
    const policy = createPolicy({ store, clock: () => T0, config });
    store.armed = true;
    const lost = await policy.check(write("w1"), writer);
    expect([lost.status, lost.reason.rule]).toEqual([503, "store_unavailable"]);
    await store.delivered;
    await settle();
    expect(store.forgotten).toEqual([true]);
    const retry = await policy.check(write("w1"), writer);
    expect([retry.status, retry.reason]).toEqual([200, { rule: "allowed" }]);
    // and its next retry is the replay of that one
    expect((await policy.check(write("w1"), writer)).reason).toEqual({ rule: "allowed", replay: true });
  });

  it("failOpen: true let the write through, so its record stays: the retry is a replay", async () => {
    const store = new ForgettingLateStore();
    const policy = createPolicy({ store, clock: () => T0, config, failOpen: true });
    store.armed = true;
    expect((await policy.check(write("w1"), writer)).allowed).toBe(true);
    await store.delivered;
    await settle();
    expect(store.forgotten).toEqual([]);
    expect((await policy.check(write("w1"), writer)).reason).toEqual({ rule: "allowed", replay: true });
  });

  it("MemoryStore.forget forgets only the record that charge wrote: not another fingerprint, another end, or one that carries a cap charge", () => {
    const store = new MemoryStore();
    const budgets = [{ key: "b:5.key_1:general", limit: 10, windowMs: 60_000 }];
    const idempotency = { key: "k:5.key_1:w1", fingerprint: "f1", ttlMs: 86_400_000, scope: "k:5.key_1" };
    store.charge({ id: "r1", now: T0, budgets, refused: false, idempotency });
    const ends = T0 + 86_400_000;
    expect(store.forget({ key: idempotency.key, fingerprint: "f2", expiresAt: ends }, T0)).toBe(false);
    expect(store.forget({ key: idempotency.key, fingerprint: "f1", expiresAt: ends + 5 }, T0)).toBe(false);
    expect(store.forget({ key: idempotency.key, fingerprint: "f1", expiresAt: ends }, T0)).toBe(true);
    expect(store.forget({ key: idempotency.key, fingerprint: "f1", expiresAt: ends }, T0)).toBe(false);
    const cap = { name: "dispatch" as const, key: "d:4.nl_1", day: 1, limit: 5, resetAt: T0 + 1_000, offsetMs: 0 };
    const send = { key: "k:5.key_1:s1", fingerprint: "f3", ttlMs: 86_400_000, scope: "k:5.key_1" };
    store.charge({ id: "r2", now: T0, budgets, refused: false, idempotency: send, cap });
    expect(store.forget({ key: send.key, fingerprint: "f3", expiresAt: ends }, T0)).toBe(false);
  });
});

describe("a store may copy its requests: ChargeRequest stays plain data (found by a review: `late`, a function, made structuredClone throw DataCloneError in a store that cloned its requests, and every send was a 503)", () => {
  it("a store that charges a structuredClone of each request answers sends, keyed writes and reads as MemoryStore does; `late` is on the request, not enumerable", async () => {
    const inner = new MemoryStore();
    const seen: ChargeRequest[] = [];
    const cloning: PolicyStore = {
      charge: (request) => {
        seen.push(request);
        return inner.charge(structuredClone(request));
      },
      release: (ticket, now) => inner.release(ticket, now),
      read: (budgets, now) => inner.read(budgets, now),
      forget: (record, now) => inner.forget(record, now),
    };
    const policy = createPolicy({ store: cloning, clock: () => T0, config });
    const writer = { credential: key({ nl_1: { content: "write", sending: "write", audience: "read" } }), roles: { nl_1: "owner" } };
    expect((await policy.check(send("k1"), writer)).status).toBe(200);
    expect((await policy.check(post("/newsletters/nl_1/articles", { idempotencyKey: "w1", body: {} }), writer)).status).toBe(200);
    expect((await policy.check(get("/newsletters/nl_1/subscribers"), writer)).status).toBe(200);
    expect(seen.map((r) => typeof r.late)).toEqual(["function", "function", "undefined"]);
    expect(seen.map((r) => Object.keys(r).includes("late"))).toEqual([false, false, false]);
    expect(JSON.parse(JSON.stringify(seen[0]))).toEqual({ ...seen[0] });
  });
});
