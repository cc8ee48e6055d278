/**
 * Telemetry: `createPolicy({ onDecision })` is told of every decision (allowed, refused, replay,
 * degraded, store failure) with its reason; a hook that throws or rejects never breaks the request.
 */
import { describe, expect, it } from "vitest";
import { createPolicy, MemoryStore, type Decision, type PolicyStore, type Who } from "../../src/index.js";
import { T0, get, key, post } from "../fixtures.js";
import { redisStore } from "./helpers.js";
import { SwitchedStore } from "./outage-store.js";

const credential = key({ nl_1: { content: "write", audience: "read", sending: "write" } }, true);
const who: Who = { credential, roles: { nl_1: "owner" }, limits: { budgets: { audience: { limit: 1 } } } };

describe.each(["MemoryStore", "RedisStore"] as const)("onDecision over %s", (way) => {
  const store = (): PolicyStore => (way === "MemoryStore" ? new MemoryStore() : redisStore());

  it("is called once with every decision, allowed, refused and replayed, each carrying its reason", async () => {
    const seen: Decision[] = [];
    const policy = createPolicy({ store: store(), clock: () => T0, onDecision: (d) => seen.push(d) });
    const returned = [
      await policy.check(get("/newsletters/nl_1/subscribers"), who),
      await policy.check(get("/newsletters/nl_1/subscribers"), who), // audience spent
      await policy.check(get("/newsletters/nl_9/articles"), who), // not reached
      await policy.check(post("/newsletters/nl_1/articles", { idempotencyKey: "k1", body: {} }), who),
      await policy.check(post("/newsletters/nl_1/articles", { idempotencyKey: "k1", body: {} }), who), // replay
      await policy.check(get("/nowhere"), who),
    ];
    expect(seen).toHaveLength(returned.length);
    // each the decision answered, frozen through (docs/operating.md, Telemetry)
    seen.forEach((d, i) => expect(d).toBe(returned[i]));
    for (const d of seen) expect(Object.isFrozen(d) && Object.isFrozen(d.headers)).toBe(true);
    expect(seen.map((d) => d.reason.rule)).toEqual(["allowed", "budget_spent", "no_reach", "allowed", "allowed", "unknown_operation"]);
    expect(seen[4]!.reason).toEqual({ rule: "allowed", replay: true });
    // the error body through, allowed_values included (found by a docs review: a hook could push into it)
    const refused = await policy.check(get("/newsletters/nl_1/articles?status=draft"), { ...who, credential: key({ nl_1: { content: "read" } }, true) });
    expect(refused.body?.error.allowed_values).toEqual(["sent"]);
    expect(Object.isFrozen(refused.body?.error.allowed_values)).toBe(true);
  });

  it("a hook that throws does not break the request: the decision is answered, the error goes to onHookError", async () => {
    const errors: [unknown, Decision][] = [];
    const policy = createPolicy({
      store: store(),
      clock: () => T0,
      onDecision: () => {
        throw new Error("metrics exporter down");
      },
      onHookError: (error, decision) => errors.push([error, decision]),
    });
    const d = await policy.check(get("/newsletters/nl_1/subscribers"), who);
    expect(d.allowed).toBe(true);
    expect(errors).toHaveLength(1);
    expect(errors[0]![0]).toMatchObject({ message: "metrics exporter down" });
    expect(errors[0]![1]).toBe(d);
  });

  it("a hook cannot change the answer: the decision is frozen through before it is shown, so setting allowed or dropping the release ticket changes nothing (found by an operating review)", async () => {
    const errors: unknown[] = [];
    const policy = createPolicy({
      store: store(),
      clock: () => T0,
      config: { caps: { dispatch: { limit: 1 } } },
      onDecision: (d) => {
        // a hook "normalising" decisions for its log schema
        (d as { allowed: boolean }).allowed = d.status < 500;
        delete (d as { release?: unknown }).release;
      },
      onHookError: (e) => errors.push(e),
    });
    const sender: Who = { credential, roles: { nl_1: "owner" } };
    const first = await policy.check(post("/articles/a_1/send", { newsletter: "nl_1" }), sender);
    expect(first.release).toBeDefined();
    expect(await policy.release(first)).toBe(true); // the ticket is still there to uncount the failed send
    await policy.check(post("/articles/a_2/send", { newsletter: "nl_1" }), sender);
    const over = await policy.check(post("/articles/a_3/send", { newsletter: "nl_1" }), sender);
    expect(over).toMatchObject({ status: 429, allowed: false, reason: { rule: "daily_cap" } });
    expect(errors.length).toBe(3); // each write to the read-only decision threw (strict mode), told to onHookError
  });

  it("an onHookError whose promise rejects is dropped: no unhandled rejection (which ends a Node process)", async () => {
    const unhandled: unknown[] = [];
    const listen = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", listen);
    try {
      const policy = createPolicy({
        store: store(),
        clock: () => T0,
        onDecision: () => {
          throw new Error("metrics exporter down");
        },
        onHookError: async (e) => {
          throw new Error(`reporter down too: ${(e as Error).message}`);
        },
      });
      expect((await policy.check(get("/newsletters/nl_1/subscribers"), who)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", listen);
    }
  });

  it("a hook whose promise rejects is caught too; without onHookError the error is dropped and the request still answered", async () => {
    const errors: unknown[] = [];
    const policy = createPolicy({ store: store(), clock: () => T0, onDecision: async () => Promise.reject(new Error("late")), onHookError: (e) => errors.push(e) });
    expect((await policy.check(get("/newsletters/nl_1/subscribers"), who)).allowed).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(errors).toEqual([expect.objectContaining({ message: "late" })]);
    const silent = createPolicy({
      store: store(),
      clock: () => T0,
      onDecision: () => {
        throw new Error("nobody listens");
      },
    });
    expect((await silent.check(get("/newsletters/nl_1/subscribers"), who)).allowed).toBe(true);
    const both = createPolicy({
      store: store(),
      clock: () => T0,
      onDecision: async () => Promise.reject(new Error("late")),
      onHookError: () => {
        throw new Error("the error hook fails too");
      },
    });
    expect((await both.check(get("/newsletters/nl_1/subscribers"), who)).allowed).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 0)); // no unhandled rejection (vitest fails the run on one)
  });
});

describe("onDecision on store failures", () => {
  it("is told of a 503 and of a degraded decision; a throwing onStoreError is caught like any hook", async () => {
    const main = new SwitchedStore();
    main.down = true;
    const seen: Decision[] = [];
    const hookErrors: unknown[] = [];
    const throwing = () => {
      throw new Error("logger down");
    };
    const plain = createPolicy({ store: main, clock: () => T0, onDecision: (d) => seen.push(d), onStoreError: throwing, onHookError: (e) => hookErrors.push(e) });
    expect((await plain.check(get("/newsletters/nl_1/subscribers"), who)).status).toBe(503);
    const insured = createPolicy({ store: main, clock: () => T0, insurance: { store: new MemoryStore(), share: 0.5 }, onDecision: (d) => seen.push(d) });
    expect((await insured.check(get("/newsletters/nl_1/subscribers"), { ...who, limits: undefined })).degraded).toBe(true);
    expect(seen.map((d) => [d.reason.rule, d.degraded ?? false])).toEqual([
      ["store_unavailable", false],
      ["allowed", true],
    ]);
    expect(hookErrors).toEqual([expect.objectContaining({ message: "logger down" })]);
  });
});
