/**
 * An Idempotency-Key is bound to the whole request: method, path, query and JSON body. A retry with
 * the same key must be the same request; anything else answers `conflict` (409). Defect from
 * issue 7: the fingerprint held the method and path only, so one key carried any body past the
 * daily caps.
 */
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { createPolicy, emptyUsage, evaluate, MemoryStore, release, type Decision, type PolicyRequest, type Usage } from "../src/index.js";
import { RedisStore } from "../src/redis/index.js";
import { cleanUp, ioredis, ioredisCall, keysUnder, uniquePrefix } from "./redis/helpers.js";
import { canonicalJson, requestFingerprint } from "../src/fingerprint.js";
import { BOTH_QUERIES } from "../src/request.js";
import { T0, key } from "./fixtures.js";
import { BOUNDS } from "../src/bounds.js";
import { runInNewContext } from "node:vm";
import { createHash } from "node:crypto";

const credential = key({ nl_1: { content: "write", sending: "write", audience: "write" } });
const roles = { nl_1: "owner" };
const testSend = (to: string[], extra: Partial<PolicyRequest> = {}): PolicyRequest => ({
  method: "POST",
  path: "/articles/a_1/test-send",
  newsletter: "nl_1",
  idempotencyKey: "key-1",
  body: { to },
  ...extra,
});
/** 200 different recipient lists of one to five addresses. */
const lists = Array.from({ length: 200 }, (_, i) => Array.from({ length: 1 + (i % 5) }, (_, j) => `r${i}.${j}@example.com`));

function tally(decisions: Decision[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const d of decisions) out[`${d.status} ${d.allowed ? d.reason.rule : d.body.error.code}`] = (out[`${d.status} ${d.allowed ? d.reason.rule : d.body.error.code}`] ?? 0) + 1;
  return out;
}

function expectConflict(d: Decision): void {
  expect(d.status).toBe(409);
  expect(d.body?.error).toMatchObject({ code: "conflict", param: "Idempotency-Key" });
  expect(d.body?.error.message).toContain('Idempotency-Key "key-1" was already used for a different request');
  expect(d.charged.caps).toEqual([]);
}

describe("Idempotency-Key fingerprint: method, path, query and body", () => {
  // 1.5 s between sends keeps the write budget (60 per minute) from deciding.
  it("a replayed Idempotency-Key passes the daily caps whatever the body says (evaluate: 200 test sends, one key, 200 recipient lists → 1 allowed, 199 conflicts)", () => {
    let usage: Usage = emptyUsage();
    const decisions = lists.map((to, i) => {
      const out = evaluate(testSend(to), { credential, roles, usage, now: T0 + i * 1500 });
      usage = out.usage;
      return out.decision;
    });
    expect(tally(decisions)).toEqual({ "200 allowed": 1, "409 conflict": 199 });
    expect(decisions[0]!.charged.caps).toEqual(["testSend"]);
    decisions.slice(1).forEach(expectConflict);
  });

  it("a replayed Idempotency-Key passes the daily caps whatever the body says (policy.check: 200 test sends, one key, 200 recipient lists → 1 allowed, 199 conflicts)", async () => {
    let now = T0;
    const policy = createPolicy({ store: new MemoryStore(), clock: () => now });
    const decisions: Decision[] = [];
    for (const to of lists) {
      decisions.push(await policy.check(testSend(to), { credential, roles }));
      now += 1500;
    }
    expect(tally(decisions)).toEqual({ "200 allowed": 1, "409 conflict": 199 });
    decisions.slice(1).forEach(expectConflict);
  });

  it("an allowed replay (same method, path, query and body) is flagged reason.replay and counts nothing more", async () => {
    const policy = createPolicy({ store: new MemoryStore(), clock: () => T0 });
    const first = await policy.check(testSend(["a@example.com", "b@example.com"]), { credential, roles });
    // the same JSON with its keys in another order is the same request
    const again = await policy.check({ ...testSend([]), body: JSON.parse('{"to":["a@example.com","b@example.com"]}') }, { credential, roles });
    expect(first).toMatchObject({ allowed: true, reason: { rule: "allowed" }, charged: { caps: ["testSend"] } });
    expect(again).toMatchObject({ allowed: true, reason: { rule: "allowed", replay: true }, charged: { caps: [] } });
  });

  it("the query is part of the request: the same key with another query answers conflict; names in another order do not", () => {
    const base = { credential, roles, now: T0 };
    const send = (path: string): PolicyRequest => ({ method: "POST", path, newsletter: "nl_1", idempotencyKey: "key-1", body: { at: "2026-12-01T09:00:00Z" } });
    let usage = evaluate(send("/articles/a_1/schedule?a=1&b=2"), { ...base, usage: emptyUsage() });
    const reordered = evaluate(send("/articles/a_1/schedule?b=2&a=1"), { ...base, usage: usage.usage });
    usage = reordered;
    const other = evaluate(send("/articles/a_1/schedule?a=1&b=3"), { ...base, usage: usage.usage });
    expect(reordered.decision).toMatchObject({ allowed: true, reason: { replay: true } });
    expect(other.decision.status).toBe(409);
    expect(other.decision.body?.error.message).toContain("with another query, body or newsletter");
  });

  it("DESIGN §7: one key sent to two newsletters (a path that names none: the descriptor's newsletter) is two requests: 409, never a replay on the other's cap (found by a review of RedisStore on a cluster, where it counted a key twice)", () => {
    const sender = key({ nl_1: { sending: "write" }, nl_2: { sending: "write" } });
    const both = { nl_1: "owner", nl_2: "owner" };
    const send = (newsletter: string) => ({ method: "POST", path: "/articles/a_1/send", newsletter, idempotencyKey: "K" });
    const first = evaluate(send("nl_1"), { credential: sender, roles: both, usage: emptyUsage(), now: T0 });
    expect(first.decision).toMatchObject({ allowed: true, charged: { caps: ["dispatch"] } });
    const other = evaluate(send("nl_2"), { credential: sender, roles: both, usage: first.usage, now: T0 + 1000 });
    expect(other.decision.status).toBe(409);
    expect(other.decision.body?.error.message).toContain("another query, body or newsletter");
    const retry = evaluate(send("nl_1"), { credential: sender, roles: both, usage: other.usage, now: T0 + 2000 });
    expect(retry.decision).toMatchObject({ allowed: true, reason: { replay: true }, charged: { caps: [] } });
  });

  it("with a query object given (as the adapters give it), a key is bound to that object as before, whatever the raw query string beside it: a retry across the upgrade that added the string stays a replay (found by a regression check)", () => {
    const writer = key({ nl_1: { content: "write" } });
    const create = (path: string, query?: Readonly<Record<string, string | readonly string[]>>): PolicyRequest => ({ method: "POST", path, idempotencyKey: "K", body: { title: "t" }, ...(query && { query: query as PolicyRequest["query"] }) });
    for (const [text, query] of [
      ["draft[]=1", { draft: ["1"] }],
      ["notify=a&notify=a", { notify: ["a", "a"] }],
      ["n=x+y", { n: "x y" }],
    ] as const) {
      const before = evaluate(create("/newsletters/nl_1/articles", query), { credential: writer, roles, usage: emptyUsage(), now: T0 });
      expect(before.decision.allowed).toBe(true);
      const after = evaluate(create(`/newsletters/nl_1/articles?${text}`, query), { credential: writer, roles, usage: before.usage, now: T0 + 1000 });
      expect(after.decision, text).toMatchObject({ allowed: true, reason: { replay: true } });
    }
  });

  it("an adapter's descriptor (the query object and the path's query string both judged) binds a key to both: the object alone when the string adds nothing to it, as before; else what the string adds too (bound to the object alone, a server with its query parser off made another query a replay; found by a security drill)", () => {
    const writer = key({ nl_1: { content: "write" } });
    const create = (text: string, query: Readonly<Record<string, string | readonly string[]>>, both: boolean): PolicyRequest =>
      ({ method: "POST", path: `/newsletters/nl_1/articles?${text}`, query: query as PolicyRequest["query"], idempotencyKey: "K", body: { title: "t" }, ...(both && { [BOTH_QUERIES]: true }) }) as PolicyRequest;
    const first = (text: string, query: Readonly<Record<string, string | readonly string[]>>, both = true) => evaluate(create(text, query, both), { credential: writer, roles, usage: emptyUsage(), now: T0 });
    const then = (before: { usage: Usage }, text: string, query: Readonly<Record<string, string | readonly string[]>>, both = true) => evaluate(create(text, query, both), { credential: writer, roles, usage: before.usage, now: T0 + 1000 }).decision;
    // the string adds nothing: bound as a host's descriptor with the object alone is (a retry across the upgrade stays a replay)
    for (const [text, query] of [["at=1", { at: "1" }], ["notify=a&notify=a", { notify: ["a", "a"] }], ["n=x+y", { n: "x y" }]] as const) {
      expect(then(first(text, query, false), text, query), text).toMatchObject({ allowed: true, reason: { replay: true } });
    }
    // the parser off: the object is empty, and the string is the query
    const off = first("at=1", {});
    expect(then(off, "at=2", {})).toMatchObject({ status: 409, body: { error: { code: "conflict", param: "Idempotency-Key" } } });
    expect(then(off, "at=1", {})).toMatchObject({ allowed: true, reason: { replay: true } });
    // a value the string has beyond the object's is bound too
    const beyond = first("at=1&at=2", { at: "1" });
    expect(then(beyond, "at=1&at=3", { at: "1" })).toMatchObject({ status: 409 });
    expect(then(beyond, "at=1&at=2", { at: "1" })).toMatchObject({ allowed: true, reason: { replay: true } });
  });

  it("the fingerprint is readable and safe for the Redis store: `METHOD /path` and 32 hex digits, no control characters", () => {
    const fp = requestFingerprint("POST", "/articles/a_1/test-send", new Map([["x", ["1"]]]), { to: ["\u0000\ud800"] });
    expect(fp).toMatch(/^POST \/articles\/a_1\/test-send [0-9a-f]{32}$/);
  });

  it("property: two bodies are one request exactly when they are the same JSON, whatever the key order; never throws", () => {
    // a permutation of an object's keys, at every level
    const shuffle = (value: unknown, seed: number): unknown => {
      if (Array.isArray(value)) return value.map((v, i) => shuffle(v, seed + i));
      if (typeof value !== "object" || value === null) return value;
      const entries = Object.entries(value);
      const turned = entries.length === 0 ? entries : [...entries.slice(seed % entries.length), ...entries.slice(0, seed % entries.length)].reverse();
      return Object.fromEntries(turned.map(([k, v]) => [k, shuffle(v, seed + 1)]));
    };
    const sameJson = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);
    const sortedJson = (v: unknown): string =>
      JSON.stringify(v, (_k, x: unknown) => (typeof x === "object" && x !== null && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([p], [q]) => (p < q ? -1 : p > q ? 1 : 0))) : x));
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), fc.nat(), (a, b, seed) => {
        expect(canonicalJson(shuffle(a, seed))).toBe(canonicalJson(a));
        // canonical text equal ⇔ the same JSON (sorted-key JSON.stringify as the independent model)
        expect(sameJson(a, b)).toBe(sortedJson(a) === sortedJson(b));
        const fp = (body: unknown) => requestFingerprint("POST", "/p", new Map(), body);
        expect(fp(shuffle(a, seed)) === fp(b)).toBe(sortedJson(a) === sortedJson(b));
      }),
      { numRuns: 300 },
    );
  });

  it("property: through evaluate, a second send with the key is a flagged replay when its body is the same JSON and a 409 conflict otherwise", () => {
    const recipients = fc.array(fc.constantFrom("a@example.com", "b@example.com", "c@example.com", "d@example.com"), { minLength: 1, maxLength: 5 });
    fc.assert(
      // other body fields besides `to` (a field named `to` would replace the list: a counterexample the fuzzer found)
      fc.property(recipients, recipients, fc.dictionary(fc.string({ maxLength: 4 }).filter((name) => name !== "to"), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }), (to1, to2, extra) => {
        const body1 = { ...extra, to: to1 };
        const body2 = { to: to2, ...extra };
        const first = evaluate(testSend([], { body: body1 }), { credential, roles, usage: emptyUsage(), now: T0 });
        expect(first.decision.allowed).toBe(true);
        const second = evaluate(testSend([], { body: body2 }), { credential, roles, usage: first.usage, now: T0 + 1000 });
        const same = JSON.stringify(to1) === JSON.stringify(to2);
        if (same) expect(second.decision).toMatchObject({ allowed: true, reason: { rule: "allowed", replay: true }, charged: { caps: [] } });
        else expectConflict(second.decision);
      }),
      { numRuns: 200 },
    );
  });

  it("canonicalJson writes the text it wrote before it walked one frame per container (the model below, as it was): a key recorded before an upgrade still matches its retry", () => {
    // (a function is no longer data at all: a 400 naming body, below)
    const odd = fc.oneof(fc.constant(undefined), fc.bigInt(), fc.constant(Number.NaN), fc.constant(-0), fc.constant(Symbol("s")));
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: "small" }, fc.jsonValue({ maxDepth: 2 }), odd, fc.array(tie("node"), { maxLength: 4 }), fc.dictionary(fc.string({ maxLength: 3 }), tie("node"), { maxKeys: 4 })),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        expect(canonicalJson(v)).toBe(canonicalJsonBefore(v));
      }),
      { numRuns: 500 },
    );
    // the odd shapes the walk was written for, one by one: readable ones write the text they wrote
    const revoked = Proxy.revocable([], {});
    revoked.revoke();
    const shared = { s: 1 };
    for (const v of [[shared, shared], [[], {}, [[]]], new Array(3), { __proto__: null, z: 1 }]) {
      expect(canonicalJson(v)).toBe(canonicalJsonBefore(v));
    }
    // a getter, a revoked Proxy or a cycle has no text now (below)
    const throwing = Object.defineProperty({ b: 1 }, "x", { enumerable: true, get: () => { throw new Error("no"); } });
    expect(canonicalJson([1, throwing, 2])).toEqual({ problem: "unreadable" });
    expect(canonicalJson({ p: revoked.proxy })).toEqual({ problem: "unreadable" });
  });

  it("a keyed write's body is bounded before the work that grows with it (docs/security.md): past 50 000 values or 1 MiB of JSON it is refused 400 naming body, its elements unread; without a key it is not fingerprinted at all (found by a black-box review: a 1 MB body cost 369 ms)", () => {
    let reads = 0;
    const isIndex = (k: string | symbol) => typeof k === "string" && /^\d+$/.test(k);
    // an element read either way: by get, or by its own property descriptor (the reader's way)
    const counted = (length: number) =>
      new Proxy(new Array(length).fill(0), {
        get: (t, k) => (isIndex(k) && reads++, Reflect.get(t, k)),
        getOwnPropertyDescriptor: (t, k) => (isIndex(k) && reads++, Reflect.getOwnPropertyDescriptor(t, k)),
      });
    const keyed = (body: unknown) => evaluate(testSend([], { body: { to: ["a@example.com"], ...(body as object) }, idempotencyKey: "k-1" }), { credential, roles, usage: emptyUsage(), now: T0 }).decision;
    expect(keyed({ pad: counted(1_000_000) }).body?.error).toMatchObject({ code: "invalid_request", param: "body" });
    expect(reads).toBe(0);
    expect(keyed({ pad: "x".repeat(2_000_000) }).body?.error).toMatchObject({ code: "invalid_request", param: "body" });
    expect(keyed({ pad: Object.fromEntries(Array.from({ length: 60_000 }, (_, i) => [`k${i}`, i])) }).body?.error).toMatchObject({ param: "body" });
    // within the bounds, a keyed write goes on
    expect(keyed({ pad: new Array(40_000).fill(0) }).allowed).toBe(true);
    expect(keyed({ pad: "x".repeat(500_000) }).allowed).toBe(true);
    // without a key the body is not fingerprinted: no bound applies
    const plain = evaluate(testSend([], { body: { to: ["a@example.com"], pad: counted(1_000_000) }, idempotencyKey: undefined }), { credential, roles, usage: emptyUsage(), now: T0 }).decision;
    expect(plain.allowed).toBe(true);
  });

  it("canonicalJson never throws and never recurses: deep nesting and cycles past the depth bound, getters unread, odd values tagged", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const nested = (depth: number): unknown => {
      let deep: unknown = "leaf";
      for (let i = 0; i < depth; i++) deep = [deep];
      return deep;
    };
    expect(canonicalJson(cyclic)).toEqual({ problem: "bounds" });
    expect(canonicalJson(nested(100_000))).toEqual({ problem: "bounds" });
    expect(canonicalJson(nested(BOUNDS.keyedBodyDepth))).toHaveLength(BOUNDS.keyedBodyDepth * 2 + 6);
    expect(canonicalJson(nested(BOUNDS.keyedBodyDepth + 1))).toEqual({ problem: "bounds" });
    let runs = 0;
    const getter = Object.defineProperty({}, "x", { enumerable: true, get: () => ++runs });
    expect(canonicalJson(getter)).toEqual({ problem: "unreadable" });
    expect(runs).toBe(0);
    expect(canonicalJson([undefined, 1n, NaN])).toBe("[!undefined,!1n,!NaN]");
    expect(canonicalJson([undefined, () => 1])).toEqual({ problem: "not_data" });
    expect(canonicalJson(undefined)).not.toBe(canonicalJson(null));
  });

  // docs/security.md: a body is read as the descriptor is, own data properties only, and bounded
  // before the work that grows with it. Found by a hostile-input drill: a getter in a keyed body ran,
  // a body whose Proxy traps threw was fingerprinted as "unreadable" (two different ones under one
  // key: a replay, not a 409), two Maps both read as {}, and a Buffer's every index was listed
  // before the bound (a 10 MB typed array: ~3.6 s a call).
  describe("a keyed write's body: data only, read without running its code (docs/security.md)", () => {
    const send = (body: unknown, usage: Usage = emptyUsage()) =>
      evaluate({ method: "POST", path: "/articles/a_1/send", newsletter: "nl_1", idempotencyKey: "P", body, requestId: "r" }, { credential, roles, usage, now: T0 });
    const refusedBody = (body: unknown) => send(body).decision.body?.error;

    it("a getter in the body is never run: 400 naming body", () => {
      let runs = 0;
      const body = { to: "x", get at() { return ++runs; } };
      expect(refusedBody(body)).toMatchObject({ code: "invalid_request", param: "body" });
      expect(refusedBody([body])).toMatchObject({ code: "invalid_request", param: "body" });
      expect(runs).toBe(0);
    });

    it("a Proxy whose traps throw is a 400, so two different ones under one key are never a replay", () => {
      const a = send(new Proxy({}, { ownKeys() { throw new Error("1"); } }));
      expect(a.decision.body?.error).toMatchObject({ code: "invalid_request", param: "body" });
      expect(a.decision.body?.error.message).toContain("could not be read");
      expect(refusedBody({ inner: new Proxy({ other: 2 }, { getOwnPropertyDescriptor() { throw new Error("2"); } }) })).toMatchObject({ param: "body" });
    });

    it.each([
      ["a Map", new Map([["a", 1]])],
      ["a Set", new Set([1])],
      ["a class instance", new (class Body { a = 1; })()],
      ["a Map inside", { to: [new Map()] }],
      // every function was one body, `!function` (found by a shapes drill: `() => 2` replayed `function a(){}`)
      ["a function", function a() {}],
      ["a function inside", { to: [() => 2] }],
    ])("%s is not JSON data: 400 naming body (two of them no longer read as one {})", (_what, body) => {
      const error = refusedBody(body);
      expect(error).toMatchObject({ code: "invalid_request", param: "body" });
      expect(error?.message).toContain("must be JSON data");
    });

    it("a Date (what a JSON reviver hands over) is bound by its time: the same time replays, another is a 409 (each read as {}, every date was one body)", () => {
      const body = (at: Date) => ({ to: "x", at });
      const first = send(body(new Date(Date.UTC(2026, 11, 1, 9))));
      expect(first.decision.allowed).toBe(true);
      expect(send(body(new Date(Date.UTC(2026, 11, 1, 9))), first.usage).decision.reason).toMatchObject({ replay: true });
      expect(send(body(new Date(Date.UTC(2026, 11, 2, 9))), first.usage).decision.status).toBe(409);
      expect(canonicalJson(new Date(5))).toBe("!date:5");
      expect(canonicalJson(new Date(Number.NaN))).toBe("!date:NaN");
      expect(canonicalJson(runInNewContext("new Date(5)"))).toBe("!date:5");
      // an own getTime is never run, and a Date that carries data of its own is not data (the text would not tell it from a bare one)
      let runs = 0;
      const shadowed = Object.assign(new Date(7), { getTime: () => ++runs });
      expect(canonicalJson(shadowed)).toEqual({ problem: "not_data" });
      expect(canonicalJson(Object.assign(new Date(7), { x: 1 }))).toEqual({ problem: "not_data" });
      // own keys of every kind: a Symbol, a non-enumerable one (a review: Object.keys passed the enumerable case alone)
      expect(canonicalJson(Object.assign(new Date(7), { [Symbol("tz")]: "UTC" }))).toEqual({ problem: "not_data" });
      expect(canonicalJson(Object.defineProperty(new Date(7), "tz", { value: "UTC", enumerable: false }))).toEqual({ problem: "not_data" });
      expect(runs).toBe(0);
    });

    it("a date is a Date of any realm carrying nothing of its own, on prototypes that add nothing, ending at a realm's own Date.prototype; a Date of any other shape is not data (each read as a bare Date or as {}; found by reviews)", () => {
      // a subclass that adds nothing, and the dates fake timers make (an own constructor, on a prototype holding only one), are dates
      expect(canonicalJson(new (class Stamp extends Date {})(5))).toBe("!date:5");
      class ClockDate extends Date {
        constructor(time: number) {
          super(time);
          Object.defineProperty(this, "constructor", { value: Date, enumerable: false }); // as fake timers do
        }
      }
      expect(canonicalJson(new ClockDate(5))).toBe("!date:5");
      // a subclass with a field or a method, data put between a date and Date.prototype: not data
      class Stamped extends Date {
        zone = "UTC";
      }
      expect(canonicalJson(new Stamped(5))).toEqual({ problem: "not_data" });
      expect(canonicalJson(new (class Iso extends Date { override toJSON() { return "1999-01-01"; } })(5))).toEqual({ problem: "not_data" });
      expect(canonicalJson(Object.setPrototypeOf(new Date(5), Object.assign(Object.create(Date.prototype) as object, { zone: "UTC" })))).toEqual({ problem: "not_data" });
      expect(refusedBody({ at: new Stamped(5) })).toMatchObject({ code: "invalid_request", param: "body" });
      // a Date moved onto no prototype, Object.prototype or an empty object: read as {}, its time dropped, while new Date(x) still reads it
      for (const proto of [null, Object.prototype, {}, runInNewContext("Object.prototype") as object]) expect(canonicalJson(Object.setPrototypeOf(new Date(5), proto))).toEqual({ problem: "not_data" });
      expect(canonicalJson({ at: Object.setPrototypeOf(Object.assign(new Date(5), { a: 1 }), Object.prototype) })).toEqual({ problem: "not_data" });
      // on Date.prototype but no Date, and a Proxy of a Date
      expect(canonicalJson(Object.create(Date.prototype) as object)).toEqual({ problem: "not_data" });
      expect(canonicalJson(new Proxy(new Date(5), {}))).toEqual({ problem: "not_data" });
      // another realm's Date.prototype is one, unless data is hung on it
      expect(canonicalJson(runInNewContext("[new Date(5), new Date(6)]"))).toBe("[!date:5,!date:6]");
      expect(canonicalJson(runInNewContext("Date.prototype.zone = 'UTC'; new Date(5)"))).toEqual({ problem: "not_data" });
      // look-alikes of a Date.prototype are not one: its constructor a function named Date, itself a Date, a Proxy of the real one
      const named = runInNewContext("const p = Object.setPrototypeOf(new Date(9), Object.prototype); p.constructor = function Date() {}; p.constructor.prototype = p; p") as object;
      expect(canonicalJson(Object.setPrototypeOf(new Date(5), named))).toEqual({ problem: "not_data" });
      const fakeCtor = runInNewContext("const p = { toJSON() { return 'x'; } }; p.constructor = function Date() {}; p.constructor.prototype = p; p") as object;
      expect(canonicalJson(Object.setPrototypeOf(new Date(5), fakeCtor))).toEqual({ problem: "not_data" });
      // a Proxy between a date and Date.prototype, whose traps answer a handler's toISOString and toJSON with another time (it passed as a prototype adding nothing; found by a review of the mends)
      const lying = { get: (target: object, key: PropertyKey, receiver: unknown) => (key === "toISOString" || key === "toJSON" ? () => "2099-01-01T00:00:00.000Z" : Reflect.get(target, key, receiver)) };
      const between = new Proxy(Object.create(Date.prototype) as object, lying);
      expect(canonicalJson(Object.setPrototypeOf(new Date(0), between))).toEqual({ problem: "not_data" });
      const classless = Object.create(Date.prototype, { constructor: { value: function Stamp() {} } }) as object;
      expect(canonicalJson(Object.setPrototypeOf(new Date(0), classless))).toEqual({ problem: "not_data" });
      // a Proxy that passes for a class's prototype: of a real class's prototype (not that class's own), or the prototype of a plain function
      class Stamp extends Date {}
      expect(canonicalJson(Object.setPrototypeOf(new Date(0), new Proxy(Stamp.prototype, lying)))).toEqual({ problem: "not_data" });
      function Plain() {}
      Plain.prototype = new Proxy(Object.create(Date.prototype, { constructor: { value: Plain } }) as object, lying);
      expect(canonicalJson(Object.setPrototypeOf(new Date(0), Plain.prototype as object))).toEqual({ problem: "not_data" });
      expect(canonicalJson(new Stamp(0))).toBe("!date:0");
      // a method named class is no class, whatever its text says (a review: it passed with a Proxy prototype)
      const method = runInNewContext("({ class () {} }).class") as { prototype: object }; // its text "class () {}", kept as written
      method.prototype = new Proxy(Object.create(Date.prototype, { constructor: { value: method } }) as object, lying);
      expect(canonicalJson(Object.setPrototypeOf(new Date(0), method.prototype))).toEqual({ problem: "not_data" });
      // what a walk remembers of one class does not pass another prototype (a legit subclass first, then a Proxy)
      expect(canonicalJson([new Stamp(0), Object.setPrototypeOf(new Date(0), new Proxy(Stamp.prototype, lying))])).toEqual({ problem: "not_data" });
      // a moved date's own Symbol.toStringTag neither runs (a getter) nor hides it ("Object")
      let tagRuns = 0;
      const tagged = Object.defineProperty(Object.setPrototypeOf(new Date(5), Object.prototype), Symbol.toStringTag, { get: () => (tagRuns++, "Object") });
      expect(canonicalJson({ at: tagged })).toEqual({ problem: "not_data" });
      expect(canonicalJson({ at: Object.assign(Object.setPrototypeOf(new Date(5), Object.prototype), { [Symbol.toStringTag]: "Object" }) })).toEqual({ problem: "not_data" });
      expect(canonicalJson(Object.defineProperty({ a: 1 }, Symbol.toStringTag, { get: () => (tagRuns++, "Object") }))).toBe('{"a":1}');
      expect(tagRuns).toBe(0);
      // nor a tag served through a Proxy prototype that lists no keys, by its trap (never run) or its target's chain (found by a review)
      let trapRuns = 0;
      const serving = new Proxy({}, { ownKeys: () => [], getPrototypeOf: () => Object.prototype, get: (_target, key) => (trapRuns++, key === Symbol.toStringTag ? "Object" : undefined) });
      expect(canonicalJson({ at: Object.setPrototypeOf(new Date(1), serving) })).toEqual({ problem: "not_data" });
      expect(trapRuns).toBe(0);
      const inherited = new Proxy(Object.create({ [Symbol.toStringTag]: "Object" }) as object, { ownKeys: () => [], getPrototypeOf: () => null });
      expect(canonicalJson(Object.setPrototypeOf(new Date(1), inherited))).toEqual({ problem: "not_data" });
      // a look-alike Object.prototype (a function named Object) with data on it is no plain object's root
      const rootLike = Object.assign(Object.create(null) as Record<string, unknown>, { isAdmin: true });
      rootLike.constructor = Object.defineProperty(function Object() {}, "prototype", { value: rootLike });
      expect(canonicalJson(Object.create(rootLike) as object)).toEqual({ problem: "not_data" });
      // what a walk remembers of another realm's Object.prototype does not pass the look-alike after it
      expect(canonicalJson([runInNewContext("({ a: 1 })"), Object.create(rootLike) as object])).toEqual({ problem: "not_data" });
      // a date's own constructor is a function, not a getter or a value a handler reads
      expect(canonicalJson(Object.defineProperty(new Date(5), "constructor", { get: () => Date }))).toEqual({ problem: "not_data" });
      expect(canonicalJson(Object.assign(new Date(5), { constructor: "admin" }))).toEqual({ problem: "not_data" });
      // a Proxy that hands out a new prototype without end is walked a bounded way
      const endless = (): object => new Proxy({}, { getPrototypeOf: () => endless(), ownKeys: () => [] });
      expect(canonicalJson(Object.setPrototypeOf(new Date(5), endless()))).toEqual({ problem: "not_data" });
      const served = new Proxy(Date.prototype, { get: (target, key, receiver) => (key === "isAdmin" ? true : Reflect.get(target, key, receiver)) });
      expect(canonicalJson(Object.setPrototypeOf(new Date(5), served))).toEqual({ problem: "not_data" });
    });

    it("a reviver's dates under vitest's fake timers (each an own constructor on the fake Date's prototype) are dates: a host's test suite that fakes timers kept every keyed write with a date a 400 (found by a diff review)", () => {
      vi.useFakeTimers();
      try {
        const revive = (text: string) => JSON.parse(text, (_key, value: unknown) => (typeof value === "string" && /^\d{4}-/.test(value) ? new Date(value) : value)) as unknown;
        const first = send(revive('{"to":"x","at":"2026-12-01T09:00:00Z"}'));
        expect(first.decision.allowed).toBe(true);
        expect(send(revive('{"to":"x","at":"2026-12-01T09:00:00Z"}'), first.usage).decision.reason).toMatchObject({ replay: true });
        expect(send(revive('{"to":"x","at":"2026-12-02T09:00:00Z"}'), first.usage).decision.status).toBe(409);
      } finally {
        vi.useRealTimers();
      }
    });

    it("dates are read alike when the global Date was faked or mocked before this module loaded (its native text was read from the global: every other realm's date, and structuredClone's, was refused; found by a review)", async () => {
      const RealDate = Date;
      vi.useFakeTimers();
      try {
        vi.resetModules();
        const fresh = (await import("../src/fingerprint.js")).canonicalJson;
        expect(canonicalJson(runInNewContext("new Date(5)"))).toBe("!date:5");
        expect(fresh(runInNewContext("new Date(5)"))).toBe("!date:5");
        expect(fresh(structuredClone(new RealDate(7)))).toBe("!date:7");
        expect(fresh(new Date(9))).toBe("!date:9");
      } finally {
        vi.useRealTimers();
        vi.resetModules();
      }
    });

    it("a date costs what an object does: Date.prototype's keys are not listed for each (~2 µs a date, 49 000 of them ~106 ms; found by a review)", () => {
      const local = Array.from({ length: 100 }, (_, i) => new Date(i));
      const foreign = runInNewContext("Array.from({ length: 100 }, (_, i) => new Date(i))") as Date[];
      const ownKeys = vi.spyOn(Reflect, "ownKeys");
      try {
        expect(canonicalJson(local)).toMatch(/^\[!date:0,/);
        // one listing a date: its own keys (that it has none)
        expect(ownKeys).toHaveBeenCalledTimes(100);
        ownKeys.mockClear();
        expect(canonicalJson(foreign)).toMatch(/^\[!date:0,/);
        // and another realm's Date.prototype listed once a walk
        expect(ownKeys).toHaveBeenCalledTimes(101);
        // a chain of classes is walked once a walk, not again for each date (a chain of 20 000 cost 675 ms for 200 dates; found by a review)
        let Deep: DateConstructor = Date;
        for (let i = 0; i < 50; i++) Deep = class extends Deep {} as DateConstructor;
        const deep = Array.from({ length: 100 }, (_, i) => new Deep(i));
        const getPrototypeOf = vi.spyOn(Object, "getPrototypeOf");
        try {
          expect(canonicalJson(deep)).toMatch(/^\[!date:0,!date:1,/);
          expect(getPrototypeOf.mock.calls.length).toBeLessThan(2 * 100 + 50 + 10); // two a date, and the chain once
        } finally {
          getPrototypeOf.mockRestore();
        }
        // each realm's once, however they alternate (one remembered at a time: 409 ms for 49 000; found by a diff review)
        const second = runInNewContext("Array.from({ length: 100 }, (_, i) => new Date(i))") as Date[];
        const alternating = foreign.flatMap((date, i) => [date, second[i]!]);
        ownKeys.mockClear();
        expect(canonicalJson(alternating)).toMatch(/^\[!date:0,!date:0,!date:1,/);
        expect(ownKeys).toHaveBeenCalledTimes(202);
      } finally {
        ownKeys.mockRestore();
      }
    });

    it("a null-prototype object, and a plain object of another realm, are data", () => {
      expect(send({ __proto__: null, a: 1 }).decision.allowed).toBe(true);
      expect(send(runInNewContext("({ a: [1, { b: 2 }] })")).decision.allowed).toBe(true);
      expect(canonicalJson(runInNewContext("({ b: 2, a: [1] })"))).toBe(canonicalJson({ a: [1], b: 2 }));
    });

    it("bytes (a Buffer, a typed array, a DataView, an ArrayBuffer, of any realm) are bound by their bytes: the same bytes replay, other bytes conflict", () => {
      const first = send(Buffer.from("hello"));
      expect(first.decision.allowed).toBe(true);
      const again = send(new Uint8Array(Buffer.from("hello")), first.usage);
      expect(again.decision.reason).toMatchObject({ replay: true });
      expect(send(Buffer.from("hellp"), first.usage).decision.status).toBe(409);
      // the text: their length and SHA-256 (node:crypto as the independent model)
      const text = (bytes: number[]) => `!bytes:${bytes.length}:${createHash("sha256").update(Uint8Array.from(bytes)).digest("hex")}`;
      expect(canonicalJson(Buffer.from([0, 255]))).toBe(text([0, 255]));
      expect(canonicalJson(new Uint8Array([1, 2, 3, 4]).subarray(1, 3))).toBe(text([2, 3]));
      expect(canonicalJson(new DataView(new Uint8Array([9, 10]).buffer, 1))).toBe(text([10]));
      expect(canonicalJson(new Uint8Array([7]).buffer)).toBe(text([7]));
      expect(canonicalJson(runInNewContext("new DataView(new Uint8Array([9, 10]).buffer, 1)"))).toBe(text([10]));
      expect(canonicalJson(runInNewContext("new Uint8Array([7]).buffer"))).toBe(text([7]));
      expect(canonicalJson(runInNewContext("new Uint8Array([7, 8])"))).toBe(text([7, 8]));
      // the kind is the array's own, whatever prototype it was moved onto
      expect(canonicalJson(Object.setPrototypeOf(new Float32Array([1]), Uint8Array.prototype))).toMatch(/^!bytes:Float32Array:4:/);
      // a view on no prototype is bytes too (it read as the object of its indexes; found by a diff review)
      expect(canonicalJson(Object.setPrototypeOf(new Uint8Array([7, 8]), null))).toBe(text([7, 8]));
      expect(canonicalJson(Object.setPrototypeOf(new Uint8Array([7, 8]), null))).not.toBe(canonicalJson({ 0: 7, 1: 8 }));
      // an own accessor over a platform getter is never run
      let runs = 0;
      const shadowed = Object.defineProperty(new Uint8Array([1]), "buffer", { get: () => (runs++, new ArrayBuffer(8)) });
      expect(canonicalJson(shadowed)).toBe(text([1]));
      expect(runs).toBe(0);
      // bytes and the JSON that spells their numbers are two bodies (the old walk read both as {"0":104,"1":105})
      expect(canonicalJson(Buffer.from("hi"))).not.toBe(canonicalJson({ 0: 104, 1: 105 }));
    });

    it("DESIGN §7: a typed array whose elements are not bytes is bound by its kind too: Float32Array([1]) and the Uint8Array of its four bytes are two bodies (both read as the same bytes; found by a security drill)", () => {
      const sha = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
      const one = new Float32Array([1]);
      const itsBytes = new Uint8Array(one.buffer);
      expect(canonicalJson(one)).toBe(`!bytes:Float32Array:4:${sha(itsBytes)}`);
      expect(canonicalJson(runInNewContext("new Float32Array([1])"))).toBe(`!bytes:Float32Array:4:${sha(itsBytes)}`);
      const kinds = [one, new Int32Array([1065353216]), new Uint16Array(one.buffer), new Int8Array(one.buffer), new BigInt64Array(1), new BigUint64Array(1)];
      const texts = kinds.map((v) => canonicalJson(v));
      expect(new Set(texts).size).toBe(kinds.length);
      // bytes read as bytes whatever holds them: a Buffer, a Uint8Array, a Uint8ClampedArray, a DataView, an ArrayBuffer
      const bytesText = `!bytes:4:${sha(itsBytes)}`;
      for (const v of [itsBytes, Buffer.from(itsBytes), new Uint8ClampedArray(one.buffer), new DataView(one.buffer), one.buffer]) expect(canonicalJson(v)).toBe(bytesText);
      expect(texts).not.toContain(bytesText);
      // through evaluate: the same key on the other kind is a 409
      const first = send({ cover: one });
      expect(send({ cover: new Int32Array([1065353216]) }, first.usage).decision.status).toBe(409);
      expect(send({ cover: itsBytes }, first.usage).decision.status).toBe(409);
      expect(send({ cover: new Float32Array([1]) }, first.usage).decision.reason).toMatchObject({ replay: true });
    });

    it("bytes count against the length bound one character a byte: up to 1 MiB goes on, past it a 400", () => {
      expect(refusedBody(new Uint8Array(10_000_000))).toMatchObject({ code: "invalid_request", param: "body" });
      expect(refusedBody(Buffer.alloc(BOUNDS.keyedBodyLength))).toMatchObject({ param: "body" });
      expect(send(Buffer.alloc(BOUNDS.keyedBodyLength - 200)).decision.allowed).toBe(true);
      expect(refusedBody([Buffer.alloc(BOUNDS.keyedBodyLength / 2), "x".repeat(BOUNDS.keyedBodyLength / 2)])).toMatchObject({ param: "body" });
    });

    it("a chain of key-less prototypes is walked four deep at most (safe-read.ts inheritsNothing): past it, not data", () => {
      const onChain = (links: number, root: object | null) => {
        let proto: object | null = root;
        for (let i = 0; i < links; i++) proto = Object.create(proto) as object;
        return Object.assign(Object.create(proto) as object, { a: 1 });
      };
      expect(canonicalJson(onChain(4, Object.prototype))).toBe('{"a":1}');
      expect(canonicalJson(onChain(5, Object.prototype))).toEqual({ problem: "not_data" });
      expect(canonicalJson(onChain(4, null))).toBe('{"a":1}');
      expect(canonicalJson(onChain(5, null))).toEqual({ problem: "not_data" });
    });

    it("data hung on a prototype is not data: a handler reads body.x through it, the walk would not (diff review)", () => {
      const hung = (x: number) => Object.create(Object.assign(Object.create(null), { x })) as object;
      expect(refusedBody(hung(1))?.message).toContain("must be JSON data");
      expect(refusedBody({ inner: Object.create({ x: 1 }) })).toMatchObject({ param: "body" });
    });

    it("a form body as fast-querystring (@fastify/formbody's parser) builds it is data: its prototype holds no keys (every keyed form write on Fastify was a 400; found by a review)", async () => {
      const { parse } = (await import("fast-querystring")) as unknown as { parse: (text: string) => object };
      const form = parse("to=a%40example.com&x=1");
      expect(Object.getPrototypeOf(form)).not.toBe(Object.prototype);
      expect(canonicalJson(form)).toBe(canonicalJson({ to: "a@example.com", x: "1" }));
      expect(send(form).decision.allowed).toBe(true);
    });

    it("each bytes value counts as 64 values (each is hashed on its own): thousands of tiny ones are past the bound (a review: 14 000 empty ones cost ~80 ms)", () => {
      expect(refusedBody(Array.from({ length: 1000 }, () => new Uint8Array(0)))).toMatchObject({ param: "body" });
      expect(send(Array.from({ length: 700 }, () => new Uint8Array(1))).decision.allowed).toBe(true);
    });

    it("a key counts against the length bound, as a string does (checked before it is copied)", () => {
      expect(canonicalJson({ ["k".repeat(2000)]: 1 }, { values: 10, length: 1000, depth: 4 })).toEqual({ problem: "bounds" });
      expect(canonicalJson({ ["k".repeat(900)]: 1 }, { values: 10, length: 1000, depth: 4 })).toBe(`{"${"k".repeat(900)}":1}`);
    });

    it("policy.check answers the same", async () => {
      const policy = createPolicy({ store: new MemoryStore(), clock: () => T0 });
      for (const body of [new Map(), new Proxy({}, { ownKeys() { throw new Error("x"); } }), { get a() { return 1; } }]) {
        const d = await policy.check({ method: "POST", path: "/articles/a_1/send", newsletter: "nl_1", idempotencyKey: "Q", body }, { credential, roles });
        expect(d.body?.error).toMatchObject({ code: "invalid_request", param: "body" });
      }
    });
  });
});

/** canonicalJson as it was written before (a frame per value): the model the one in use is held to. */
type Frame = { value: unknown } | { close: string; parent?: object };

function canonicalJsonBefore(value: unknown): string {
  const out: string[] = [];
  const open = new Set<object>();
  const stack: Frame[] = [{ value }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if ("close" in frame) {
      out.push(frame.close);
      if (frame.parent !== undefined) open.delete(frame.parent);
      continue;
    }
    const v = frame.value;
    if (v === null) out.push("null");
    else if (typeof v === "string") out.push(JSON.stringify(v));
    else if (typeof v === "number") out.push(Number.isFinite(v) ? JSON.stringify(v) : `!${String(v)}`);
    else if (typeof v === "boolean") out.push(v ? "true" : "false");
    else if (typeof v === "bigint") out.push(`!${v}n`);
    else if (typeof v !== "object") out.push(`!${typeof v}`);
    else if (open.has(v)) out.push("!cycle");
    else {
      try {
        const items: Frame[] = [];
        if (Array.isArray(v)) {
          out.push("[");
          for (let i = 0; i < v.length; i++) {
            if (i > 0) items.push({ close: "," });
            items.push({ value: v[i] });
          }
          stack.push({ close: "]", parent: v });
        } else {
          out.push("{");
          const keys = Object.keys(v).sort();
          keys.forEach((key, i) => {
            items.push({ close: `${i > 0 ? "," : ""}${JSON.stringify(key)}:` });
            items.push({ value: (v as Record<string, unknown>)[key] });
          });
          stack.push({ close: "}", parent: v });
        }
        open.add(v);
        for (let i = items.length - 1; i >= 0; i--) stack.push(items[i]!);
      } catch {
        out.push("!unreadable");
      }
    }
  }
  return out.join("");
}

// DESIGN §7: "A key … lives 24 hours. Only an allowed write records its key … once that charge is
// released, the key counts again on its next allowed use." A released key's retry that runs again is
// an allowed write that records the key: it lives 24 h from that use. Kept at 24 h from the first use,
// a retry 25 h after the first use, and 2 h after the schedule that ran, was run a second time and
// counted again (found by an independent oracle).
describe("DESIGN §7: a released key's use that counts again records the key afresh, for 24 h", () => {
  const H = 3_600_000;
  const sender = key({ nl_1: { sending: "write" } });
  const schedule: PolicyRequest = { method: "POST", path: "/articles/a_1/schedule", newsletter: "nl_1", idempotencyKey: "K", body: { at: "2026-12-01T09:00:00Z" } };
  const ways = ["evaluate", "MemoryStore", "RedisStore"] as const;

  /** One way of deciding the schedule, with a clock the test sets; `close` tidies Redis. */
  function session(way: (typeof ways)[number], label: string) {
    const state = { now: T0, usage: emptyUsage() as Usage };
    const redis = way === "RedisStore" ? ioredis() : undefined;
    const prefix = uniquePrefix(label);
    const policy = createPolicy({ store: redis ? new RedisStore({ redis: ioredisCall(redis), prefix }) : new MemoryStore(), clock: () => state.now });
    return {
      state,
      redis,
      prefix,
      async ask(): Promise<Decision> {
        if (way !== "evaluate") return policy.check(schedule, { credential: sender, roles });
        const r = evaluate({ ...schedule, requestId: `r${state.now}` }, { credential: sender, roles, usage: state.usage, now: state.now });
        state.usage = r.usage;
        return r.decision;
      },
      /** Releases `d`: true when a charge was uncounted (evaluate: the snapshot changed; release hands back the same object otherwise). */
      async giveBack(d: Decision): Promise<boolean> {
        if (way !== "evaluate") return policy.release(d);
        const before = state.usage;
        state.usage = release(state.usage, d, state.now);
        return state.usage !== before;
      },
      async close(): Promise<void> {
        if (redis === undefined) return;
        await cleanUp(redis, prefix);
        redis.disconnect();
      },
    };
  }

  it.each(ways)("%s: a release at the very end of the key's 24 h frees it, so that after a clock step back its retry runs and counts again, and a second release changes nothing (it stayed a replay; found by a black-box review)", async (way) => {
    const s = session(way, "idempotency-edge");
    try {
      const first = await s.ask();
      expect(first.charged.caps).toEqual(["dispatch"]);
      s.state.now = T0 + 24 * H; // the record's end, exactly: the schedule failed downstream, released now
      expect(await s.giveBack(first)).toBe(true);
      s.state.now -= 60_000; // the clock steps back a minute: the record is live again, and no longer counted
      const retry = await s.ask();
      expect(retry.reason).toEqual({ rule: "allowed" });
      expect(retry.charged.caps).toEqual(["dispatch"]);
      // the first ticket again: nothing more to uncount
      expect(await s.giveBack(first)).toBe(false);
      expect((await s.ask()).reason).toEqual({ rule: "allowed", replay: true }); // the retry's own charge stands
    } finally {
      await s.close();
    }
  });

  it.each(ways)("%s: release, retry at +23 h (runs and counts again), retry at +25 h → a replay, no cap charged", async (way) => {
    const s = session(way, "idempotency-renew");
    try {
      const first = await s.ask();
      expect(first.charged.caps).toEqual(["dispatch"]);
      await s.giveBack(first); // the schedule failed downstream
      s.state.now = T0 + 23 * H;
      const again = await s.ask();
      expect(again.reason).toEqual({ rule: "allowed" }); // runs again
      expect(again.charged.caps).toEqual(["dispatch"]);
      s.state.now = T0 + 25 * H;
      const retry = await s.ask();
      expect(retry.reason).toEqual({ rule: "allowed", replay: true });
      expect(retry.charged.caps).toEqual([]);
      s.state.now = T0 + 23 * H + 24 * H; // 24 h after the use that counted: the key is forgotten
      expect((await s.ask()).reason).toEqual({ rule: "allowed" });
      if (s.redis) {
        // the record's and the index's expiry follow the newest use
        const keys = await keysUnder(s.redis, s.prefix);
        const record = keys.find((k) => /:k:/.test(k) && !/^.*:x:k:/.test(k))!;
        expect(await s.redis.pttl(record)).toBeGreaterThan(23 * H);
      }
    } finally {
      await s.close();
    }
  });
});
