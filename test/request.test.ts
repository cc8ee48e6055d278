import { describe, expect, it } from "vitest";
import { Session, get, key, post } from "./fixtures.js";

const s = () => new Session(key({ nl_1: { content: "write", audience: "write", sending: "write", insights: "read" } }, true), { nl_1: "owner" });

describe("untrusted request descriptors never throw: they are refused with a clear error (DESIGN §10)", () => {
  it.each([
    [undefined, "method"],
    [null, "method"],
    ["GET /me", "method"],
    [42, "method"],
    [{}, "method"],
    [{ method: "GET" }, "path"],
    [{ method: "GET", path: 7 }, "path"],
    [{ method: "GET", path: "me" }, "path"],
    [{ method: "G E T", path: "/me" }, "method"],
    [{ method: ["GET"], path: "/me" }, "method"],
    [{ method: "GET", path: "/" + "a/".repeat(3000) }, "path"],
  ])("descriptor %j is refused as malformed, param %s", (request, param) => {
    const d = s().run(request);
    expect(d.status).toBe(400);
    expect(d.body?.error).toMatchObject({ code: "invalid_request", param });
    expect(d.charged.budgets).toEqual(["general"]);
  });

  it.each([
    "/newsletters/nl_1/../subscribers",
    "/newsletters/%2e%2e/subscribers",
    "/newsletters/./subscribers",
    "/newsletters/nl%2F1/subscribers",
    "/newsletters/nl%5C1/subscribers",
    "/newsletters//subscribers",
    "/newsletters/%E0%A4%A/subscribers",
    "/newsletters/nl%00/subscribers",
  ])("path %s is refused with param path", (path) => {
    expect(s().run(get(path)).body?.error).toMatchObject({ code: "invalid_request", param: "path" });
  });

  it("percent-encoded ids are decoded before they are matched", () => {
    const session = new Session(key({ "nl 1": { audience: "read" } }), { "nl 1": "owner" });
    expect(session.run(get("/newsletters/nl%201/subscribers")).allowed).toBe(true);
    expect(session.run(get("/newsletters/nl%201/subscribers")).newsletter).toBe("nl 1");
  });

  it.each(["__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf"])("the object-prototype name %s as a newsletter id never matches a grant", (id) => {
    const d = s().run(get(`/newsletters/${id}/subscribers`));
    expect(d.status).toBe(404);
    const viaDescriptor = s().run(post("/articles/a_1/send", { newsletter: id }));
    expect(viaDescriptor.status).toBe(404);
  });

  it("odd query shapes: repeated and comma-separated values, bad encoding, wrong types", () => {
    const session = s();
    expect(session.run(get("/newsletters/nl_1/insights?expand=subscriber&expand=subscriber")).allowed).toBe(true);
    expect(session.run(get("/newsletters/nl_1/articles?status=%ZZ")).body?.error).toMatchObject({ param: "query" });
    expect(session.run(get("/newsletters/nl_1/articles", { query: { status: 5 as never } })).body?.error).toMatchObject({ param: "status" });
    expect(session.run(get("/newsletters/nl_1/articles", { query: "status=sent" as never })).body?.error).toMatchObject({ param: "query" });
    expect(session.run(get("/newsletters/nl_1/articles?status=&tag=")).allowed).toBe(true);
  });

  it("wrong body types for test-send and tagging answer invalid_request naming the field", () => {
    const session = s();
    for (const body of [undefined, null, "x", [], { to: "a@x.io" }, { to: [1] }, { to: [""] }, { to: {} }]) {
      expect(session.run(post("/articles/a_1/test-send", { newsletter: "nl_1", body })).body?.error).toMatchObject({ code: "invalid_request", param: "to" });
    }
    for (const body of [{}, { subscribers: "s_1" }, { subscribers: [null] }, { subscribers: [] }]) {
      expect(session.run(post("/tags/t_1/subscribers", { newsletter: "nl_1", body })).body?.error).toMatchObject({ param: "subscribers" });
    }
  });

  it("a body whose prototype carries the field does not count as having it", () => {
    const body = Object.create({ to: ["a@x.io"] });
    expect(s().run(post("/articles/a_1/test-send", { newsletter: "nl_1", body })).body?.error.param).toBe("to");
  });

  it("an Idempotency-Key that is not 1 to 255 visible characters is bad input", () => {
    const session = s();
    for (const k of ["", "a b", "x".repeat(256), 12, {}]) {
      expect(session.run(post("/newsletters/nl_1/articles", { idempotencyKey: k as never })).body?.error).toMatchObject({ param: "Idempotency-Key" });
    }
    expect(session.run(get("/me", { idempotencyKey: 12 as never })).allowed).toBe(true); // reads ignore it
  });

  it("a host request id of an odd shape is ignored rather than echoed", () => {
    const d = s().run(get("/me", { requestId: "<script>" }));
    expect(d.requestId).toMatch(/^req_[0-9a-f]{16}$/);
  });

  it("a getter that throws on the descriptor is a 400 naming the field, never an exception (issue 8 #6)", () => {
    const request = { method: "GET", get path(): string { throw new Error("host bug"); } };
    const d = s().run(request);
    expect(d.status).toBe(400);
    expect(d.body?.error.param).toBe("path");
  });
});
