/**
 * Issue 8, defects 6, 7 and 8: shapes that threw, `to` checked only by length, and the cost of
 * hostile sizes. Every case runs through `evaluate` and `check`; neither may throw, and both must
 * answer the same 400 naming the field.
 */
import { describe, expect, it } from "vitest";
import { createPolicy, emptyUsage, evaluate, MemoryStore, type Decision, type PolicyRequest } from "../../src/index.js";
import { T0, key, post, get } from "../fixtures.js";

const credential = key({ nl_1: { sending: "write", content: "write", audience: "write" } });
const roles = { nl_1: "owner" };

async function both(request: unknown): Promise<[Decision, Decision]> {
  const pure = evaluate(request as PolicyRequest, { credential, roles, usage: emptyUsage(), now: T0 }).decision;
  const policy = createPolicy({ store: new MemoryStore(), clock: () => T0 });
  const checked = await policy.check(request as PolicyRequest, { credential, roles });
  return [pure, checked];
}

async function refusedNaming(request: unknown, param: string, status = 400): Promise<void> {
  const [pure, checked] = await both(request);
  for (const d of [pure, checked]) {
    expect(d.status, JSON.stringify(d.body)).toBe(status);
    expect(d.body?.error.code).toBe("invalid_request");
    expect(d.body?.error.param).toBe(param);
  }
  expect(checked.reason).toEqual(pure.reason);
}

async function allowed(request: unknown): Promise<void> {
  const [pure, checked] = await both(request);
  expect(pure.allowed, JSON.stringify(pure.body)).toBe(true);
  expect(checked.allowed).toBe(true);
}

const testSend = (to: unknown) => post("/articles/a/test-send", { newsletter: "nl_1", body: { to } });
const tagging = (subscribers: unknown) => post("/tags/t_1/subscribers", { newsletter: "nl_1", body: { subscribers } });

describe("issue 8 defect 6: shapes that still threw are a 400 naming the field", () => {
  it("a sparse query array {status: [, 'sent']} is a 400 naming status, in both APIs", async () => {
    // eslint-disable-next-line no-sparse-arrays
    await refusedNaming(get("/newsletters/nl_1/articles", { query: { status: [, "sent"] } as never }), "status");
    await refusedNaming(get("/newsletters/nl_1/articles", { query: { status: new Array(3) } as never }), "status");
  });

  for (const field of ["method", "path", "query", "idempotencyKey", "body", "newsletter", "requestId"]) {
    it(`a throwing getter on the descriptor's ${field} is a 400 naming it, in both APIs`, async () => {
      const request = { method: "POST", path: "/articles/a/test-send", newsletter: "nl_1", body: { to: ["a@x.io"] } } as Record<string, unknown>;
      Object.defineProperty(request, field, { enumerable: true, get() { throw new Error("host bug"); } });
      await refusedNaming(request, field === "idempotencyKey" ? "Idempotency-Key" : field);
    });
  }

  it("a lazy body getter (one that would work) is not run: a 400 naming body, the same in both APIs", async () => {
    let runs = 0;
    const request = { method: "POST", path: "/articles/a/test-send", newsletter: "nl_1", get body() { runs++; return { to: ["a@x.io"] }; } };
    await refusedNaming(request, "body");
    expect(runs).toBe(0);
  });

  it("a Proxy descriptor whose traps throw, and a revoked Proxy, are a 400, never an exception", async () => {
    const throwing = new Proxy({ method: "GET", path: "/rate-limit" }, { getOwnPropertyDescriptor() { throw new Error("trap"); }, get() { throw new Error("trap"); }, has() { throw new Error("trap"); }, ownKeys() { throw new Error("trap"); } });
    await refusedNaming(throwing, "method");
    const { proxy, revoke } = Proxy.revocable({ method: "GET", path: "/rate-limit" }, {});
    revoke();
    await refusedNaming(proxy, "method");
  });

  it("a Proxy descriptor that only lies in its get trap is read by its own data properties", async () => {
    const lying = new Proxy({ method: "GET", path: "/rate-limit" }, { get() { throw new Error("get is never used"); } });
    await allowed(lying);
  });

  it("a throwing getter or a Proxy on the body, or on its to/subscribers array, is a 400 naming the list field", async () => {
    const body = { get to() { throw new Error("lazy"); } };
    await refusedNaming(post("/articles/a/test-send", { newsletter: "nl_1", body }), "to");
    const proxyBody = new Proxy({ to: ["a@x.io"] }, { getOwnPropertyDescriptor() { throw new Error("trap"); } });
    await refusedNaming(post("/articles/a/test-send", { newsletter: "nl_1", body: proxyBody }), "to");
    const proxyList = new Proxy(["a@x.io"], { getOwnPropertyDescriptor() { throw new Error("trap"); } });
    await refusedNaming(testSend(proxyList), "to");
    const { proxy, revoke } = Proxy.revocable(["s_1"], {});
    revoke();
    await refusedNaming(tagging(proxy), "subscribers");
    const getterList = ["a@x.io"];
    Object.defineProperty(getterList, 0, { get() { throw new Error("lazy"); } });
    await refusedNaming(testSend(getterList), "to");
  });

  it("prototype keys are not read: a descriptor whose fields sit on its prototype has no method", async () => {
    await refusedNaming(Object.create({ method: "GET", path: "/rate-limit" }), "method");
    // a query object whose parameters sit on its prototype: a handler reading query.status gets one the
    // policy would not read as the request's, so it is refused, naming query (it was allowed)
    const [pure, check] = await both(get("/newsletters/nl_1/articles", { query: Object.assign(Object.create({ status: { toString: null } }), { limit: "10" }) }));
    expect(pure.body?.error).toMatchObject({ code: "invalid_request", param: "query" });
    expect(check.body?.error).toMatchObject({ code: "invalid_request", param: "query" });
  });
});

describe("issue 8 defect 7: each entry of `to` is one address; each subscriber one id", () => {
  it("to checked only by length: eight addresses in one string are a 400 naming to", async () => {
    await refusedNaming(testSend(["a@x.io, b@x.io, c@x.io, d@x.io, e@x.io, f@x.io, g@x.io, h@x.io"]), "to");
    await refusedNaming(testSend(["a@x.io;b@x.io"]), "to");
    await refusedNaming(testSend(["a@x.io b@x.io"]), "to");
    await refusedNaming(testSend(["a@b@x.io"]), "to");
    await refusedNaming(testSend(["no-at-sign"]), "to");
    await refusedNaming(testSend(["@x.io"]), "to");
    await refusedNaming(testSend(["a@"]), "to");
    await refusedNaming(testSend([`${"a".repeat(250)}@x.io`]), "to");
  });

  it("new Array(5) is not five addresses; holes and non-strings are a 400 naming to", async () => {
    await refusedNaming(testSend(new Array(5)), "to");
    // eslint-disable-next-line no-sparse-arrays
    await refusedNaming(testSend(["a@x.io", , "b@x.io"]), "to");
    await refusedNaming(testSend(["a@x.io", 5]), "to");
    await refusedNaming(testSend([]), "to");
    await refusedNaming(testSend(["a@x.io", "b@x.io", "c@x.io", "d@x.io", "e@x.io", "f@x.io"]), "to");
  });

  it("one to five single addresses are allowed", async () => {
    await allowed(testSend(["a@x.io"]));
    await allowed(testSend(["a@x.io", "b.c+d@sub.x.io", "e@x.io", "f@x.io", "g@x.io"]));
  });

  it("tagging subscribers: each a non-empty string id of at most 255 characters, at most 500 of them", async () => {
    await refusedNaming(tagging(new Array(3)), "subscribers");
    await refusedNaming(tagging(["s_1", ""]), "subscribers");
    await refusedNaming(tagging(["s".repeat(256)]), "subscribers");
    await refusedNaming(tagging(Array.from({ length: 501 }, (_, i) => `s_${i}`)), "subscribers");
    await allowed(tagging(Array.from({ length: 500 }, (_, i) => `s_${i}`)));
  });
});

/** An array Proxy that counts how many of its properties are read. */
function counting<T extends object>(target: T): { proxy: T; reads: () => number } {
  let reads = 0;
  const proxy = new Proxy(target, {
    get(t, p, r) { reads++; return Reflect.get(t, p, r); },
    getOwnPropertyDescriptor(t, p) { reads++; return Reflect.getOwnPropertyDescriptor(t, p); },
  });
  return { proxy, reads: () => reads };
}

describe("issue 8 defect 8: hostile sizes are refused before any work that grows with them", () => {
  it("a 10 MB path, idempotency key or newsletter is a 400 naming the field", async () => {
    const huge = "a".repeat(10_000_000);
    await refusedNaming(get("/" + huge), "path");
    await refusedNaming(post("/articles/a/send", { newsletter: "nl_1", idempotencyKey: huge }), "Idempotency-Key");
    await refusedNaming(post("/articles/a/send", { newsletter: huge }), "newsletter");
    await refusedNaming({ method: huge, path: "/rate-limit" }, "method");
  });

  it("a query object with 100k keys, or more than 100 parameters, is a 400 naming query", async () => {
    const wide: Record<string, string> = {};
    for (let i = 0; i < 100_000; i++) wide[`p${i}`] = "x";
    await refusedNaming(get("/newsletters/nl_1/articles", { query: wide }), "query");
    const justOver: Record<string, string> = {};
    for (let i = 0; i < 101; i++) justOver[`p${i}`] = "x";
    await refusedNaming(get("/newsletters/nl_1/articles", { query: justOver }), "query");
    await refusedNaming(get("/newsletters/nl_1/articles", { query: { expand: Array.from({ length: 101 }, () => "x") } }), "expand");
    await refusedNaming(get("/newsletters/nl_1/articles?" + Array.from({ length: 101 }, (_, i) => `p${i}=x`).join("&")), "query");
    await refusedNaming(get("/newsletters/nl_1/articles", { query: { status: "x".repeat(4097) } }), "status");
    const atBound: Record<string, string> = {};
    for (let i = 0; i < 100; i++) atBound[`p${i}`] = "x";
    await allowed(get("/newsletters/nl_1/articles", { query: atBound }));
  });

  it("a body list of a million entries is refused after reading its length only", async () => {
    const { proxy, reads } = counting(Array.from({ length: 1_000_000 }, () => "a@x.io"));
    await refusedNaming(testSend(proxy), "to");
    expect(reads()).toBeLessThan(10);
    const subscribers = counting(Array.from({ length: 1_000_000 }, (_, i) => `s_${i}`));
    await refusedNaming(tagging(subscribers.proxy), "subscribers");
    expect(subscribers.reads()).toBeLessThan(10);
  });
});
