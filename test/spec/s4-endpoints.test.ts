import { describe, expect, it } from "vitest";
import { Session, get, key, post } from "../fixtures.js";

const everything = key(
  { nl_1: { content: "write", audience: "write", sending: "write", insights: "write", settings: "write", webhooks: "write" } },
  true,
);

describe("spec §4 endpoints: each operation of the table is routed with its permission and budgets", () => {
  const rows: Array<[string, string, string, string | undefined, string[]]> = [
    ["GET", "/rate-limit", "rateLimit.get", undefined, ["general"]],
    ["GET", "/me", "me.get", "account: read", ["general"]],
    ["GET", "/memberships", "memberships.list", "account: read", ["general"]],
    ["GET", "/subscriptions", "subscriptions.list", "account: read", ["general"]],
    ["GET", "/saved-articles", "savedArticles.list", "account: read", ["general"]],
    ["GET", "/liked-articles", "likedArticles.list", "account: read", ["general"]],
    ["GET", "/newsletters/nl_1/subscribers", "subscribers.list", "audience: read", ["general", "audience"]],
    ["GET", "/subscribers/sub_1", "subscribers.get", "audience: read", ["general", "audience"]],
    ["GET", "/newsletters/nl_1/insights", "insights.list", "insights: read", ["general", "audience"]],
    ["GET", "/newsletters/nl_1/events", "events.list", "audience: read", ["general", "audience"]],
    ["GET", "/newsletters/nl_1/articles", "articles.list", "content: read", ["general"]],
    ["GET", "/newsletters/nl_1/threads", "threads.list", "content: read", ["general"]],
    ["POST", "/tags/tag_1/subscribers", "tags.subscribers.add", "audience: write", ["general", "write"]],
    ["POST", "/articles/a_1/send", "articles.send", "sending: write", ["general", "write"]],
    ["POST", "/articles/a_1/schedule", "articles.schedule", "sending: write", ["general", "write"]],
    ["POST", "/articles/a_1/test-send", "articles.testSend", "sending: write", ["general", "write"]],
    ["POST", "/newsletters/nl_1/articles", "articles.create", "content: write", ["general", "write"]],
    ["PATCH", "/articles/a_1", "articles.update", "content: write", ["general", "write"]],
  ];

  it.each(rows)("%s %s is %s, needs %s, counts against %j", (method, path, id, needs, budgets) => {
    const body = path.endsWith("test-send") ? { to: ["a@example.com"] } : { subscribers: ["s_1"] };
    const allowed = new Session(everything, { nl_1: "owner" }).run({ method, path, newsletter: "nl_1", body });
    expect(allowed).toMatchObject({ allowed: true, operation: id, charged: { budgets } });
    if (needs === undefined) return;
    const none = needs === "account: read" ? key({ nl_1: {} }, false) : key({ nl_1: {} }, true);
    const refused = new Session(none, { nl_1: "owner" }).run({ method, path, newsletter: "nl_1", body });
    expect(refused.status).toBe(403);
    expect(refused.body?.error.allowed_values).toEqual([needs]);
  });

  it("GET /rate-limit needs no permission beyond a credential", () => {
    expect(new Session(key({}), {}).run(get("/rate-limit")).allowed).toBe(true);
  });

  it("paths without {newsletter} take the newsletter from the descriptor; without one the resource is not found", () => {
    const s = new Session(everything, { nl_1: "owner" });
    expect(s.run(get("/subscribers/sub_1", { newsletter: "nl_1" })).newsletter).toBe("nl_1");
    expect(s.run(get("/subscribers/sub_1")).status).toBe(404);
  });

  it("a {newsletter} in the path wins over the descriptor's newsletter", () => {
    const s = new Session(everything, { nl_1: "owner" });
    expect(s.run(get("/newsletters/nl_1/subscribers", { newsletter: "nl_2" })).newsletter).toBe("nl_1");
  });

  it("methods are case-insensitive; HEAD is read as GET; a query string and a trailing slash are allowed", () => {
    const s = new Session(everything, { nl_1: "owner" });
    expect(s.run({ method: "get", path: "/newsletters/nl_1/subscribers/?limit=100" }).operation).toBe("subscribers.list");
    expect(s.run({ method: "HEAD", path: "/me" }).operation).toBe("me.get");
  });

  it("DESIGN §11 unknown operations fail closed: 404 not_found, charged to general", () => {
    const s = new Session(everything, { nl_1: "owner" });
    for (const request of [get("/articles/a_1"), { method: "DELETE", path: "/newsletters/nl_1/subscribers" }, post("/me"), { method: "OPTIONS", path: "/me" }]) {
      const d = s.run(request);
      expect(d.status).toBe(404);
      expect(d.body?.error.code).toBe("not_found");
      expect(d.reason.rule).toBe("unknown_operation");
      expect(d.charged.budgets).toEqual(["general"]);
    }
  });

  it("hosts extend the catalogue through config; general always applies and writes also count against write", () => {
    const s = new Session(everything, { nl_1: "owner" }, {
      operations: [{ id: "settings.update", method: "PATCH", path: "/newsletters/{newsletter}/settings", needs: "settings: write", budgets: ["write"] }],
    });
    expect(s.run({ method: "PATCH", path: "/newsletters/nl_1/settings" })).toMatchObject({ allowed: true, operation: "settings.update", charged: { budgets: ["general", "write"] } });
  });

  it("expand accepts the path subscriber on insights; unknown paths are bad input (param expand)", () => {
    const s = new Session(everything, { nl_1: "owner" });
    expect(s.run(get("/newsletters/nl_1/insights?expand=subscriber")).allowed).toBe(true);
    expect(s.run(get("/newsletters/nl_1/insights?expand=subscriber,article")).body?.error).toMatchObject({ code: "invalid_request", param: "expand" });
    expect(s.run(get("/newsletters/nl_1/subscribers?expand=subscriber")).body?.error).toMatchObject({ code: "invalid_request", param: "expand" });
  });
});
