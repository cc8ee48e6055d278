import { freeze } from "immer";
import { describe, expect, it } from "vitest";
import { createPolicy, emptyUsage, evaluate, PolicyConfigError, type PolicyState } from "../src/index.js";
import { recordsIn, usageData } from "../src/snapshot.js";
import { T0, get, key } from "./fixtures.js";
import fc from "fast-check";
import { FNV_BASIS, FNV_BASIS_2, FNV_PRIME, FNV_PRIME_2 } from "../src/hash.js";
import { inputId, LONG_TEXT, randomId, requestIds, WHOLE_NUMBER } from "../src/request-id.js";
import type { DescriptorRead } from "../src/request.js";

describe("evaluate is pure", () => {
  const credential = freeze(key({ nl_1: { audience: "read" } }), true);
  const state: PolicyState = freeze({ credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0 }, true);

  it("accepts frozen inputs, leaves them unchanged, and gives the same decision for the same inputs", () => {
    const request = freeze(get("/newsletters/nl_1/subscribers"), true);
    const a = evaluate(request, state);
    const b = evaluate(request, state);
    expect(a.decision).toEqual(b.decision);
    expect(a.usage).toEqual(b.usage);
    expect(state.usage).toEqual(emptyUsage());
    expect(Object.isFrozen(a.usage)).toBe(true);
  });

  it("returns the same snapshot object when nothing changed (a budget refusal charges nothing)", () => {
    const config = { budgets: { audience: { limit: 1, window: 60 } } };
    const first = evaluate(get("/newsletters/nl_1/subscribers"), { ...state, config });
    expect(first.usage).not.toBe(state.usage);
    const refused = evaluate(get("/newsletters/nl_1/subscribers"), { ...state, usage: first.usage, config });
    expect(refused.decision.status).toBe(429);
    expect(refused.usage).toBe(first.usage);
  });

  it("two identical requests in a row get two request ids; replaying the same inputs gives the same id", () => {
    const one = evaluate(get("/me"), state);
    const two = evaluate(get("/me"), { ...state, usage: one.usage });
    expect(one.decision.requestId).not.toBe(two.decision.requestId);
    expect(evaluate(get("/me"), state).decision.requestId).toBe(one.decision.requestId);
  });
});

// Regression (code review): windows lived in one flat record, so every change copied every record
// of every credential the snapshot had seen (855 µs a request at 1 000 credentials, 7 ms at 5 000).
describe("the snapshot shares what a request does not touch", () => {
  it("a request of one credential among 1 000 replaces only the buckets holding its own budgets' windows", () => {
    let usage = emptyUsage();
    for (let i = 0; i < 1000; i++) usage = evaluate(get("/newsletters/nl_1/subscribers"), { credential: key({ nl_1: { audience: "read" } }, false, `key_${i}`), roles: { nl_1: "owner" }, usage, now: T0 }).usage;
    const before = usage;
    const after = evaluate(get("/newsletters/nl_1/subscribers"), { credential: key({ nl_1: { audience: "read" } }, false, "key_500"), roles: { nl_1: "owner" }, usage: before, now: T0 + 1 }).usage;
    const leaves = (u: typeof usage) => Object.values(usageData(u).windows).flatMap((inner) => Object.values(inner));
    const fresh = leaves(after).filter((leaf) => !leaves(before).includes(leaf));
    expect(fresh.length).toBeGreaterThanOrEqual(1);
    expect(fresh.length).toBeLessThanOrEqual(2); // general and audience of key_500
    // ~2000 windows / 256 buckets each (a leaf is pairs: key, record, …)
    expect(fresh.reduce((n, leaf) => n + (Array.isArray(leaf) ? leaf.length / 2 : Object.keys(leaf).length), 0)).toBeLessThan(40);
    expect(recordsIn(usageData(after).windows)).toHaveLength(2000);
    expect(usageData(after).keys).toBe(usageData(before).keys);
  });
});

describe("derived request ids (DESIGN §14)", () => {
  it("the default request id (policy.check) is req_ + 32 hex digits: a per-process prefix and a counter that goes up by one per id, across the 256-id blocks whose digits are written once", () => {
    const next = requestIds(randomId);
    const ids = Array.from({ length: 2_000 }, () => next(undefined));
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{32}$/);
    const prefix = ids[0]!.slice(4, 20);
    const counters = ids.map((id) => BigInt(`0x${id.slice(20)}`));
    for (let i = 1; i < ids.length; i++) {
      expect(ids[i]!.slice(4, 20)).toBe(prefix);
      expect(counters[i]! - counters[i - 1]!, ids[i]).toBe(1n);
    }
    expect(randomId()).toMatch(/^[0-9a-f]{32}$/);
    // a host's id is kept (prefixed with req_ when it lacks it); only a missing or empty one is generated
    expect(next("req_abc")).toBe("req_abc");
    expect(next("abc")).toBe("req_abc");
    expect(next("req_")).toMatch(/^req_[0-9a-f]{32}$/);
    expect(requestIds(() => "mine")(undefined)).toBe("req_mine");
  });

  it("DESIGN §14: the host's requestId is the decision's on a refusal of the descriptor too (a bad path, method or newsletter answered a made-up id; found by a spec review)", async () => {
    const credential = key({ nl_1: { audience: "read" } });
    const malformed = [
      { method: "GET", path: "/a//b" },
      { method: "GET", path: "/newsletters/nl_1/./subscribers" },
      { method: "GET ", path: "/newsletters/nl_1/subscribers" },
      { method: "POST", path: "/articles/a_1/send", newsletter: 5 },
      { method: "GET", path: "/newsletters/nl_1/subscribers", query: { limit: { $gt: 1 } } },
      { method: "GET", path: "newsletters/nl_1/subscribers" },
      { method: "GET", path: `/${"a".repeat(20_000)}` },
      { method: "POST", path: "/articles/a_1/send", newsletter: "n".repeat(5_000) },
    ];
    const policy = createPolicy({ clock: () => T0, generateId: () => "generated" });
    for (const request of malformed) {
      const { decision } = evaluate({ ...request, requestId: "abc" } as never, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0 });
      expect([decision.status, decision.requestId, decision.body?.error.request_id], JSON.stringify(request)).toEqual([400, "req_abc", "req_abc"]);
      expect((await policy.check({ ...request, requestId: "abc" } as never, { credential, roles: { nl_1: "owner" } })).requestId).toBe("req_abc");
      // an id that is not one (a space) is still replaced, as on every other answer
      expect(evaluate({ ...request, requestId: "a b" } as never, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0 }).decision.requestId).toMatch(/^req_[0-9a-f]{16}$/);
    }
    // a field that cannot be read (a getter): the id is read all the same (a sender: the body is judged at the input check, after the permission)
    const getter = Object.defineProperty({ method: "POST", path: "/articles/a_1/send", newsletter: "nl_1", requestId: "abc" }, "body", { get: () => ({}), enumerable: true });
    const { decision } = evaluate(getter as never, { credential: key({ nl_1: { sending: "write" } }), roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0 });
    expect([decision.status, decision.requestId, decision.body?.error.param]).toEqual([400, "req_abc", "body"]);
  });

  it("DESIGN §14: requests alike but for the roles, the credential's grants or its account access get two ids (they were answered 200 and 404 under one id; found by a black-box review)", () => {
    const state = { usage: emptyUsage(), now: T0 };
    const read = get("/newsletters/nl_1/articles");
    const reader = key({ nl_1: { content: "read" } });
    const id = (credential: ReturnType<typeof key>, roles: Record<string, string>, request = read) => evaluate(request, { ...state, credential, roles }).decision;
    const owner = id(reader, { nl_1: "owner" });
    const noRole = id(reader, {});
    expect([owner.status, noRole.status]).toEqual([200, 404]);
    expect(owner.requestId).not.toBe(noRole.requestId);
    expect(id(reader, { nl_1: "editor" }).requestId).not.toBe(owner.requestId);
    const none = id(key({ nl_1: {} }), { nl_1: "owner" });
    expect(none.status).toBe(403);
    expect(none.requestId).not.toBe(owner.requestId);
    const me = get("/me");
    expect(id(key({}, true), {}, me).requestId).not.toBe(id(key({}, false), {}, me).requestId);
    // the same inputs, the same id
    expect(id(reader, { nl_1: "owner" }).requestId).toBe(owner.requestId);
  });

  it("inputId is the two FNV-1a hashes of its text (descriptor fields whole to 1 024 characters, a longer one by its first and last 512 and its length; the query's values to 512; subject, role and who, now, seq (whole numbers as three units); parts joined by NUL), fed piece by piece without building it, whatever was fed before (property)", () => {
    // the specification, written out: the units the id hashes (a character's code, or a marker and a number)
    const codes = (t: string): number[] => Array.from({ length: t.length }, (_, i) => t.charCodeAt(i));
    const text = (value: unknown): number[] =>
      typeof value !== "string" ? codes(typeof value) : value.length <= 1024 ? codes(value) : [...codes(value.slice(0, 512)), LONG_TEXT, value.length, ...codes(value.slice(-512))];
    const described = (read: DescriptorRead): number[] => {
      const out = [...text(read.method), 32, ...text(read.path), 32, ...text(read.idempotencyKey), 32, ...text(read.newsletter)];
      if (read.query instanceof Map) for (const [name, values] of read.query) out.push(...codes(` ${name}=${values.join(",").slice(0, 512)}`));
      return out;
    };
    const hex = (h: number) => h.toString(16).padStart(8, "0");
    // FNV-1a over units: a character's code, or a whole number's three units (WHOLE_NUMBER, low 32 bits, the rest)
    const fnvUnits = (units: readonly number[], basis: number, prime: number): number => units.reduce((h, u) => Math.imul(h ^ u, prime), basis) >>> 0;
    const number = (n: number): number[] =>
      Number.isSafeInteger(n) && n >= 0 ? [WHOLE_NUMBER, n % 2 ** 32 | 0, Math.floor(n / 2 ** 32)] : Array.from({ length: String(n).length }, (_, i) => String(n).charCodeAt(i));
    const field = fc.oneof(fc.string({ unit: "binary", maxLength: 20 }), fc.string({ minLength: 500, maxLength: 700 }), fc.string({ minLength: 1000, maxLength: 1300 }), fc.constant(undefined), fc.integer(), fc.constant(null));
    const values = fc.array(fc.oneof(fc.string({ maxLength: 8 }), fc.string({ minLength: 200, maxLength: 300 })), { maxLength: 4 });
    const query = fc.oneof(fc.constant(undefined), fc.constant({ param: "query", detail: "x" }), fc.array(fc.tuple(fc.string({ maxLength: 6 }), values), { maxLength: 3 }).map((e) => new Map(e)));
    const read = fc.record({ method: field, path: field, idempotencyKey: field, newsletter: field, query, body: fc.constant(undefined), requestId: fc.constant(undefined), unreadable: fc.constant(undefined) });
    // a descriptor fed before the one whose id is asked: the same, one that shares all but one field with it, or any other
    const before = fc.oneof(fc.constant("same" as const), fc.constantFrom("method" as const, "path" as const, "idempotencyKey" as const, "newsletter" as const, "query" as const), read);
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), read, before, read, fc.option(fc.oneof(fc.string({ maxLength: 600 }), fc.string({ minLength: 1000, maxLength: 1200 })), { nil: undefined }), fc.nat(2 * 3 ** 6 - 1), fc.oneof(fc.integer(), fc.double({ noNaN: true }), fc.maxSafeInteger(), fc.constant(-0), fc.constant(2 ** 53)), fc.oneof(fc.nat(), fc.maxSafeNat()), (subject, r, earlier, other, role, who, now, seq) => {
        const first = earlier === "same" ? r : typeof earlier === "string" ? { ...r, [earlier]: other[earlier] } : earlier;
        inputId("s", first as DescriptorRead, undefined, 0, 0, 0);
        const units = [...described(r as DescriptorRead), 0, ...codes(subject), 0, ...text(role), 32, who, 0, ...number(now), 0, ...number(seq)];
        expect(inputId(subject, r as DescriptorRead, role, who, now, seq)).toBe(hex(fnvUnits(units, FNV_BASIS, FNV_PRIME)) + hex(fnvUnits(units, FNV_BASIS_2, FNV_PRIME_2)));
      }),
      { seed: 20_261_123, numRuns: 1_000 },
    );
  });
});

describe("host input that cannot be read is a PolicyConfigError naming the field, never a bare error (found by a shapes drill: a TypeError or the host's own Error reached the caller)", () => {
  const revoked = () => {
    const r = Proxy.revocable({}, {});
    r.revoke();
    return r.proxy;
  };
  const throwing = (field: string) => Object.defineProperty({}, field, { enumerable: true, get: () => { throw new Error("no"); } });
  const good = key({ nl_1: { content: "write" } });
  const cases: Array<[string, unknown, unknown, string]> = [
    ["a revoked credential", revoked(), { nl_1: "owner" }, "credential"],
    ["revoked newsletters", { ...good, newsletters: revoked() }, { nl_1: "owner" }, "credential"],
    ["revoked grants", { ...good, newsletters: { nl_1: revoked() } }, { nl_1: "owner" }, "credential"],
    ["a throwing newsletters getter", Object.assign(throwing("newsletters"), { id: "k", kind: "api_key" }), { nl_1: "owner" }, "credential"],
    ["a throwing grants getter", { ...good, newsletters: throwing("nl_1") }, { nl_1: "owner" }, "credential"],
    ["revoked roles", good, revoked(), "roles"],
    ["a throwing roles getter", good, throwing("nl_1"), "roles"],
    ["a throwing roles function", good, () => { throw new Error("lookup failed"); }, "roles"],
  ];
  it.each(cases)("%s", async (_name, credential, roles, field) => {
    const request = get("/newsletters/nl_1/articles");
    const pure = () => evaluate(request, { credential: credential as never, roles: roles as never, usage: emptyUsage(), now: T0 });
    expect(pure).toThrow(PolicyConfigError);
    try {
      pure();
    } catch (error) {
      expect((error as PolicyConfigError).field).toBe(field);
    }
    const policy = createPolicy({ clock: () => T0 });
    await expect(policy.check(request, { credential: credential as never, roles: roles as never })).rejects.toMatchObject({ name: "PolicyConfigError", field });
  });
});
