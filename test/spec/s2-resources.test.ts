import { describe, expect, it } from "vitest";
import { evaluate, emptyUsage, type Family } from "../../src/index.js";
import { Session, T0, get, key, post } from "../fixtures.js";

describe("spec §2 error object", () => {
  it("has a single top-level key error with code, message, request_id (req_<id>) and docs_url ({docs_url}/<code>)", () => {
    const s = new Session(key({ nl_1: { content: "read" } }), { nl_1: "owner" }, { docsUrl: "https://docs.newsletter.test/errors/" });
    const d = s.run(get("/newsletters/nl_1/subscribers", { requestId: "abc123" }));
    expect(Object.keys(d.body!)).toEqual(["error"]);
    expect(d.body!.error).toEqual({
      code: "insufficient_scope",
      message: expect.any(String),
      request_id: "req_abc123",
      docs_url: "https://docs.newsletter.test/errors/insufficient_scope",
      allowed_values: ["audience: read"],
    });
    expect(d.requestId).toBe("req_abc123");
  });

  it("a request id that already has the req_ form is kept; a missing one is derived from the inputs", () => {
    const s = new Session(key({ nl_1: {} }), { nl_1: "owner" });
    expect(s.run(get("/me", { requestId: "req_42" })).body?.error.request_id).toBe("req_42");
    const derived = s.run(get("/me")).body!.error.request_id;
    expect(derived).toMatch(/^req_[0-9a-f]{16}$/);
  });

  it("allowed_values and param appear only on insufficient_scope (param also names the field of invalid_request and conflict)", () => {
    const s = new Session(key({ nl_1: { audience: "read" } }), { nl_1: "owner" }, { budgets: { audience: { limit: 1, window: 60 } } });
    s.run(get("/newsletters/nl_1/subscribers"));
    const limited = s.run(get("/newsletters/nl_1/subscribers"));
    expect(Object.keys(limited.body!.error).sort()).toEqual(["code", "docs_url", "message", "request_id"]);
    const missing = s.run(get("/newsletters/nl_2/articles"));
    expect(Object.keys(missing.body!.error).sort()).toEqual(["code", "docs_url", "message", "request_id"]);
  });

  it("the message names the specific budget or permission involved", () => {
    const s = new Session(key({ nl_1: {} }), { nl_1: "owner" });
    expect(s.run(get("/newsletters/nl_1/insights")).body?.error.message).toContain("insights: read");
  });
});

describe("DESIGN The decision", () => {
  it("body is present exactly when refused: an allowed decision has no body key at all (it had one holding undefined; found by a black-box review)", () => {
    const s = new Session(key({ nl_1: { content: "read" } }), { nl_1: "owner" });
    const allowed = s.run(get("/newsletters/nl_1/articles"));
    expect(allowed.allowed).toBe(true);
    expect("body" in allowed).toBe(false);
    expect(allowed).not.toHaveProperty("body");
    const refused = s.run(get("/newsletters/nl_1/subscribers"));
    expect(refused.body?.error.code).toBe("insufficient_scope");
  });

  it("charged holds the decision's own lists: changing one decision's changes no other's", () => {
    const s = new Session(key({ nl_1: { content: "read" } }), { nl_1: "owner" });
    const first = s.run(get("/newsletters/nl_1/articles"));
    first.charged.budgets.push("changed");
    first.charged.caps.push("changed");
    const second = s.run(get("/newsletters/nl_1/articles"));
    expect(second.charged).toEqual({ budgets: ["general"], caps: [] });
  });
});

describe("spec §2 permission model", () => {
  const families: Family[] = ["content", "audience", "sending", "insights", "settings", "webhooks"];
  const opFor: Record<Family, { read: string; write: string }> = {
    content: { read: "GET /newsletters/nl_1/articles", write: "POST /newsletters/nl_1/articles" },
    audience: { read: "GET /newsletters/nl_1/subscribers", write: "POST /tags/t_1/subscribers" },
    sending: { read: "GET /newsletters/nl_1/sending-reads", write: "POST /articles/a_1/send" },
    insights: { read: "GET /newsletters/nl_1/insights", write: "POST /newsletters/nl_1/insights-writes" },
    settings: { read: "GET /newsletters/nl_1/settings", write: "PATCH /newsletters/nl_1/settings" },
    webhooks: { read: "GET /newsletters/nl_1/webhooks", write: "POST /newsletters/nl_1/webhooks" },
  };
  const config = {
    operations: [
      { id: "sending.read", method: "GET" as const, path: "/newsletters/{newsletter}/sending-reads", needs: "sending: read" as const },
      { id: "insights.write", method: "POST" as const, path: "/newsletters/{newsletter}/insights-writes", needs: "insights: write" as const },
      { id: "settings.get", method: "GET" as const, path: "/newsletters/{newsletter}/settings", needs: "settings: read" as const },
      { id: "settings.update", method: "PATCH" as const, path: "/newsletters/{newsletter}/settings", needs: "settings: write" as const },
      { id: "webhooks.list", method: "GET" as const, path: "/newsletters/{newsletter}/webhooks", needs: "webhooks: read" as const },
      { id: "webhooks.create", method: "POST" as const, path: "/newsletters/{newsletter}/webhooks", needs: "webhooks: write" as const },
    ],
  };
  const status = (grant: Record<string, string>, op: string) => {
    const [method, path] = op.split(" ") as [string, string];
    const body = { subscribers: ["s_1"] };
    return evaluate({ method, path, newsletter: "nl_1", body }, { credential: key({ nl_1: grant }), roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0, config }).decision.status;
  };

  it.each(families)("family %s: none < read < write, and write includes read", (family) => {
    expect(status({}, opFor[family].read)).toBe(403);
    expect(status({ [family]: "none" }, opFor[family].read)).toBe(403);
    expect(status({ [family]: "read" }, opFor[family].read)).toBe(200);
    expect(status({ [family]: "read" }, opFor[family].write)).toBe(403);
    expect(status({ [family]: "write" }, opFor[family].write)).toBe(200);
    expect(status({ [family]: "write" }, opFor[family].read)).toBe(200);
  });

  it("permissions are granted per newsletter", () => {
    const s = new Session(key({ nl_1: { audience: "read" }, nl_2: { content: "read" } }), { nl_1: "owner", nl_2: "owner" });
    expect(s.run(get("/newsletters/nl_1/subscribers")).status).toBe(200);
    expect(s.run(get("/newsletters/nl_2/subscribers")).status).toBe(403);
  });

  it("account: read covers GET /me and the collections beside it; no newsletter permission implies it", () => {
    const owner = key(Object.fromEntries(["nl_1", "nl_2"].map((n) => [n, Object.fromEntries(families.map((f) => [f, "write"]))])), false);
    const s = new Session(owner, { nl_1: "owner", nl_2: "owner" });
    for (const path of ["/me", "/memberships", "/subscriptions", "/saved-articles", "/liked-articles"]) expect(s.run(get(path)).status).toBe(403);
    s.credential = key({}, true);
    for (const path of ["/me", "/memberships", "/subscriptions", "/saved-articles", "/liked-articles"]) expect(s.run(get(path)).status).toBe(200);
  });

  it("an unknown level in a grant counts as none (fail closed)", () => {
    const s = new Session(key({ nl_1: { audience: "admin" as never } }), { nl_1: "owner" });
    expect(s.run(get("/newsletters/nl_1/subscribers")).status).toBe(403);
  });

  it("a write needs write: a read-only audience credential may not tag subscribers", () => {
    const s = new Session(key({ nl_1: { audience: "read" } }), { nl_1: "owner" });
    expect(s.run(post("/tags/t_1/subscribers", { newsletter: "nl_1", body: { subscribers: ["s_1"] } })).body?.error.allowed_values).toEqual(["audience: write"]);
  });
});
