/**
 * Every snapshot the pure API hands back is frozen all the way down (DESIGN: the pure API's
 * snapshots are immutable), also when the snapshot it started from was restored from JSON
 * (unfrozen). Found in issue 10's work: a change freezes only the objects it builds, so the levels
 * and leaves it kept from an unfrozen snapshot stayed unfrozen below its frozen new ones (immer's
 * deep freeze stops at a frozen object), and a host could change them through the next snapshot.
 */
import { describe, expect, it, vi } from "vitest";
import { emptyUsage, evaluate, prune, release, reset, type Credential, type Usage } from "../src/index.js";
import { T0, get, key, unfrozenPath } from "./fixtures.js";

const roles = { nl_1: "owner" as const };
const credential = (i: number): Credential => key({ nl_1: { audience: "read", content: "write", sending: "write" } }, false, `key_${i}`);
const testSend = (i: number) => ({ method: "POST", path: "/articles/a_1/test-send", newsletter: "nl_1", body: { to: [`u${i}@example.com`] }, idempotencyKey: `k${i}` });

/** A snapshot with windows, caps and idempotency records in every bucket, split trees among them. */
function built(n: number): Usage {
  let usage = emptyUsage();
  for (let i = 0; i < n; i++) {
    usage = evaluate(get("/newsletters/nl_1/subscribers"), { credential: credential(i), roles, usage, now: T0 + i }).usage;
    usage = evaluate(testSend(i), { credential: credential(i), roles, usage, now: T0 + i }).usage;
  }
  return usage;
}

describe("DESIGN (pure evaluation): usage is an immutable snapshot, frozen all the way down", () => {
  const usage = built(3000);
  const restored = (): Usage => JSON.parse(JSON.stringify(usage)) as Usage;

  it("a snapshot built by evaluate is deep-frozen", () => {
    expect(unfrozenPath(usage)).toBeUndefined();
  });

  it("evaluate over a snapshot restored from JSON hands back a deep-frozen one (a read, and a test send)", () => {
    const read = evaluate(get("/newsletters/nl_1/subscribers"), { credential: credential(1), roles, usage: restored(), now: T0 + 5000 });
    expect(read.usage).not.toBe(usage);
    expect(unfrozenPath(read.usage)).toBeUndefined();
    const sent = evaluate(testSend(9999), { credential: credential(9999), roles, usage: restored(), now: T0 + 5000 });
    expect(sent.decision.status).toBe(200);
    expect(unfrozenPath(sent.usage)).toBeUndefined();
  });

  it("release, reset and prune over a snapshot restored from JSON hand back deep-frozen ones", () => {
    const sent = evaluate(testSend(9999), { credential: credential(9999), roles, usage, now: T0 + 5000 });
    const ticketed = JSON.parse(JSON.stringify(sent.usage)) as Usage;
    const released = release(ticketed, sent.decision, T0 + 5001);
    expect(released).not.toBe(ticketed);
    expect(unfrozenPath(released)).toBeUndefined();
    const cleared = reset(restored(), { credential: credential(7) }, T0 + 5000);
    expect(unfrozenPath(cleared)).toBeUndefined();
    const pruned = prune(restored(), T0 + 2 * 86_400_000);
    expect(unfrozenPath(pruned)).toBeUndefined();
  });

  it("the host's own objects are not frozen beyond what the next snapshot keeps (from a review: an unfrozen top level over sealed kinds froze the whole snapshot on every call)", () => {
    // a host's shallow copy: its top level is the host's, its kinds the engine's (sealed)
    const copy = { ...usage } as Usage;
    // the copy costs no more freezing than the snapshot itself: its sealed kinds are not walked again
    const freezes = (base: Usage): number => {
      const spy = vi.spyOn(Object, "freeze");
      try {
        evaluate(get("/newsletters/nl_1/subscribers"), { credential: credential(2), roles, usage: base, now: T0 + 5000 });
        return spy.mock.calls.length;
      } finally {
        spy.mockRestore();
      }
    };
    expect(freezes(copy)).toBe(freezes(usage));
    // the count sees a walk when there is one: a snapshot restored from JSON is frozen whole, once
    expect(freezes(restored())).toBeGreaterThan(10 * freezes(usage));
    const next = evaluate(get("/newsletters/nl_1/subscribers"), { credential: credential(2), roles, usage: copy, now: T0 + 5000 }).usage;
    expect(Object.isFrozen(copy)).toBe(false);
    expect(unfrozenPath(next)).toBeUndefined();
    // restored from JSON: the next snapshot is deep-frozen, the host's top level stays the host's
    const host = restored() as Usage & { savedAt?: number };
    const after = evaluate(get("/newsletters/nl_1/subscribers"), { credential: credential(3), roles, usage: host, now: T0 + 5000 }).usage;
    expect(unfrozenPath(after)).toBeUndefined();
    expect(Object.isFrozen(host)).toBe(false);
    host.savedAt = 1;
    expect(host.savedAt).toBe(1);
  });
});
