import { describe, expect, it } from "vitest";
import { Session, get, key, post } from "../fixtures.js";

const readOnly = key({ nl_1: { content: "read", audience: "read", insights: "read" } });
const writer = key({ nl_1: { content: "write", audience: "read", insights: "read" } });

describe("spec §7 insufficient_scope: status 403, message names the needed permission and what is held", () => {
  it("#1 the operation needs a family at a level the credential does not hold: allowed_values holds the needed permission", () => {
    const s = new Session(key({ nl_1: { content: "read" } }), { nl_1: "owner" });
    const d = s.run(get("/newsletters/nl_1/subscribers"));
    expect(d.status).toBe(403);
    expect(d.body?.error).toMatchObject({ code: "insufficient_scope", allowed_values: ["audience: read"] });
    expect(d.body?.error).not.toHaveProperty("param");
    expect(d.body?.error.message).toContain("audience: read");
    expect(d.body?.error.message).toContain("holds content: read");
    expect(d.reason).toMatchObject({ rule: "insufficient_scope", case: 1, needed: "audience: read" });
  });

  it("#1 write is not held when only read is: sending needs sending: write", () => {
    const s = new Session(key({ nl_1: { sending: "read" } }), { nl_1: "owner" });
    const d = s.run(post("/articles/a_1/send", { newsletter: "nl_1" }));
    expect(d.status).toBe(403);
    expect(d.body?.error.allowed_values).toEqual(["sending: write"]);
    expect(d.body?.error.message).toContain("holds sending: read");
  });

  it("#1 a credential that holds nothing on the newsletter's families says it holds nothing", () => {
    const s = new Session(key({ nl_1: {} }), { nl_1: "owner" });
    const d = s.run(get("/newsletters/nl_1/insights"));
    expect(d.body?.error.message).toContain("holds nothing");
    expect(d.body?.error.allowed_values).toEqual(["insights: read"]);
  });

  it("#2 the key was minted with the family but the owner's role caps it now: the message shows what it holds after the cap", () => {
    const s = new Session(key({ nl_1: { settings: "write", content: "write" } }), { nl_1: "editor" }, {
      operations: [{ id: "settings.update", method: "PATCH", path: "/newsletters/{newsletter}/settings", needs: "settings: write" }],
    });
    const d = s.run({ method: "PATCH", path: "/newsletters/nl_1/settings" });
    expect(d.status).toBe(403);
    expect(d.body?.error).toMatchObject({ code: "insufficient_scope", allowed_values: ["settings: write"] });
    expect(d.body?.error.message).toContain("granted settings: write");
    expect(d.body?.error.message).toContain('role "editor"');
    expect(d.body?.error.message).toContain("after the cap it holds content: write, settings: read");
    expect(d.reason).toMatchObject({ rule: "insufficient_scope", case: 2 });
  });

  it("#3 GET /me without account: read says the credential does not hold it anywhere it reaches", () => {
    const s = new Session(key({ nl_1: { content: "write" } }, false), { nl_1: "owner" });
    const d = s.run(get("/me"));
    expect(d.status).toBe(403);
    expect(d.body?.error.code).toBe("insufficient_scope");
    expect(d.body?.error.message).toContain("account: read");
    expect(d.body?.error.message).toContain("does not hold it anywhere it reaches");
    expect(d.body?.error.allowed_values).toEqual(["account: read"]);
  });

  it("#3 a credential that says nothing of account access (no account field) does not hold it: GET /me is refused (a mutant reading a missing field as access was caught by the adapter tests alone; found by a mutation review)", () => {
    const credential = { id: "key_plain", kind: "api_key" as const, newsletters: { nl_1: { content: "write" as const } } };
    const s = new Session(credential, { nl_1: "owner" });
    const d = s.run(get("/me"));
    expect([d.status, d.body?.error.code, d.body?.error.allowed_values]).toEqual([403, "insufficient_scope", ["account: read"]]);
    expect(s.run(get("/saved-articles")).status).toBe(403);
  });

  it.each(["/memberships", "/subscriptions", "/saved-articles", "/liked-articles"])("#3 the account collection %s without account: read is refused", (path) => {
    const s = new Session(key({ nl_1: { content: "write" } }, false), { nl_1: "owner" });
    expect(s.run(get(path)).body?.error).toMatchObject({ code: "insufficient_scope", allowed_values: ["account: read"] });
  });

  it("#4 a read-only credential filtering articles by a status other than sent: param status, allowed_values the allowed status values", () => {
    const s = new Session(readOnly, { nl_1: "owner" });
    const d = s.run(get("/newsletters/nl_1/articles?status=draft"));
    expect(d.status).toBe(403);
    expect(d.body?.error).toMatchObject({ code: "insufficient_scope", param: "status", allowed_values: ["sent"] });
    expect(d.body?.error.message).toContain("content: write");
    expect(d.body?.error.message).toContain("holds content: read, audience: read, insights: read");
    expect(d.reason).toMatchObject({ case: 4 });
  });

  it("#4 status=sent is what a read-only credential may send", () => {
    const s = new Session(readOnly, { nl_1: "owner" });
    const d = s.run(get("/newsletters/nl_1/articles?status=sent"));
    expect(d.allowed).toBe(true);
    expect(d.view).toBe("reader");
  });

  it("#4 repeated or comma-separated status values are each checked", () => {
    const s = new Session(readOnly, { nl_1: "owner" });
    expect(s.run(get("/newsletters/nl_1/articles?status=sent,scheduled")).body?.error.param).toBe("status");
    expect(s.run(get("/newsletters/nl_1/articles?status=sent&status=draft")).body?.error.param).toBe("status");
    expect(s.run(get("/newsletters/nl_1/articles", { query: { status: ["sent", "draft"] } })).body?.error.param).toBe("status");
    expect(s.run(get("/newsletters/nl_1/articles?status=sent&status=sent")).allowed).toBe(true);
  });

  it("#4–#6 an empty filter value is a value: ?status= is a status other than sent, ?tag= uses the tag filter, ?visibility= is not public (they were ignored, and passed)", () => {
    const s = new Session(readOnly, { nl_1: "owner" });
    for (const [path, param, specCase] of [
      ["/newsletters/nl_1/articles?status=", "status", 4],
      ["/newsletters/nl_1/articles?status=sent,", "status", 4],
      ["/newsletters/nl_1/articles?status=%20", "status", 4],
      ["/newsletters/nl_1/articles?tag=", "tag", 5],
      ["/newsletters/nl_1/articles?tag", "tag", 5],
      ["/newsletters/nl_1/threads?visibility=", "visibility", 6],
    ] as const) {
      const d = s.run(get(path));
      expect(d.status, path).toBe(403);
      expect(d.body?.error.param, path).toBe(param);
      expect(d.reason, path).toMatchObject({ case: specCase });
    }
    expect(s.run(get("/newsletters/nl_1/articles", { query: { tag: "" } })).body?.error.param).toBe("tag");
    // a credential holding write may filter as it likes, empty values included
    expect(new Session(writer, { nl_1: "owner" }).run(get("/newsletters/nl_1/articles?status=&tag=")).allowed).toBe(true);
  });

  it("#5 a read-only credential using the tag filter: param tag, allowed_values left out", () => {
    const s = new Session(readOnly, { nl_1: "owner" });
    const d = s.run(get("/newsletters/nl_1/articles?tag=launch"));
    expect(d.status).toBe(403);
    expect(d.body?.error).toMatchObject({ code: "insufficient_scope", param: "tag" });
    expect(d.body?.error).not.toHaveProperty("allowed_values");
    expect(d.reason).toMatchObject({ case: 5 });
  });

  it("#6 a read-only credential filtering threads by a visibility other than public: param visibility, allowed_values [public]", () => {
    const s = new Session(readOnly, { nl_1: "owner" });
    const d = s.run(get("/newsletters/nl_1/threads?visibility=private"));
    expect(d.status).toBe(403);
    expect(d.body?.error).toMatchObject({ code: "insufficient_scope", param: "visibility", allowed_values: ["public"] });
    expect(d.reason).toMatchObject({ case: 6 });
    expect(s.run(get("/newsletters/nl_1/threads?visibility=public")).allowed).toBe(true);
  });

  it("#7 expand names a path needing a family the credential lacks: param expand, allowed_values left out when none may be expanded", () => {
    const s = new Session(key({ nl_1: { insights: "read" } }), { nl_1: "owner" });
    const d = s.run(get("/newsletters/nl_1/insights?expand=subscriber"));
    expect(d.status).toBe(403);
    expect(d.body?.error).toMatchObject({ code: "insufficient_scope", param: "expand" });
    expect(d.body?.error).not.toHaveProperty("allowed_values");
    expect(d.body?.error.message).toContain("audience: read");
    expect(d.reason).toMatchObject({ case: 7, needed: "audience: read" });
  });

  it("#7 applies to every credential, not only read-only ones: one holding write in other families (it may see drafts) is refused expand=subscriber without audience: read (a mutant judging expand for read-only credentials only was caught by one property alone; found by a mutation review)", () => {
    const s = new Session(key({ nl_1: { insights: "write", content: "write" } }), { nl_1: "owner" });
    const d = s.run(get("/newsletters/nl_1/insights?expand=subscriber"));
    expect(d.status).toBe(403);
    expect(d.body?.error).toMatchObject({ code: "insufficient_scope", param: "expand" });
    expect(d.reason).toMatchObject({ case: 7, needed: "audience: read" });
    expect(s.run(get("/newsletters/nl_1/insights")).allowed).toBe(true);
  });

  it("#7 allowed_values lists the paths that may be expanded", () => {
    const s = new Session(key({ nl_1: { insights: "read", content: "read" } }), { nl_1: "owner" }, {
      operations: [
        {
          id: "reports.list",
          method: "GET",
          path: "/newsletters/{newsletter}/reports",
          needs: "insights: read",
          expand: { subscriber: "audience: read", article: "content: read" },
        },
      ],
    });
    const d = s.run(get("/newsletters/nl_1/reports?expand=subscriber"));
    expect(d.body?.error).toMatchObject({ param: "expand", allowed_values: ["article"] });
    expect(s.run(get("/newsletters/nl_1/reports?expand=article")).allowed).toBe(true);
  });

  it("#7 expand=subscriber with audience: read is allowed", () => {
    const s = new Session(key({ nl_1: { insights: "read", audience: "read" } }), { nl_1: "owner" });
    expect(s.run(get("/newsletters/nl_1/insights?expand=subscriber")).allowed).toBe(true);
  });
});

describe("spec §5.7 a read-only credential sees a newsletter as a reader does", () => {
  it("holding only read gives the reader view; unpublished filters are refused, not answered with an empty page", () => {
    const s = new Session(readOnly, { nl_1: "owner" });
    const list = s.run(get("/newsletters/nl_1/articles"));
    expect(list).toMatchObject({ allowed: true, view: "reader" });
    expect(s.run(get("/newsletters/nl_1/articles?status=scheduled")).status).toBe(403);
  });

  it("write in any one family may see drafts, scheduled, tag-scoped articles and private threads", () => {
    const s = new Session(key({ nl_1: { content: "read", webhooks: "write" } }), { nl_1: "owner" });
    expect(s.run(get("/newsletters/nl_1/articles?status=draft"))).toMatchObject({ allowed: true, view: "full" });
    expect(s.run(get("/newsletters/nl_1/articles?tag=launch")).allowed).toBe(true);
    expect(s.run(get("/newsletters/nl_1/threads?visibility=private")).allowed).toBe(true);
  });

  it("write capped away by the role makes the credential read-only again (the cap is applied before deciding the view)", () => {
    const s = new Session(key({ nl_1: { content: "read", settings: "write" } }), { nl_1: "editor" });
    expect(s.run(get("/newsletters/nl_1/articles?status=draft")).status).toBe(403);
    expect(s.run(get("/newsletters/nl_1/articles")).view).toBe("reader");
  });

  // Regression (black-box audit): qs-style names (`status[]`, `expand[0]`) are the same parameter to
  // Express and Fastify, and slipped past #4–#7.
  it("#4–#7 a bracketed query name (status[], tag[0], visibility[], expand[]) is the same parameter and is refused the same way", () => {
    const s = new Session(readOnly, { nl_1: "owner" });
    const cases = [
      ["/newsletters/nl_1/articles?status[]=draft", "status"],
      ["/newsletters/nl_1/articles?status%5B%5D=draft", "status"],
      ["/newsletters/nl_1/articles?tag[0]=launch", "tag"],
      ["/newsletters/nl_1/threads?visibility[]=private", "visibility"],
    ] as const;
    for (const [path, param] of cases) {
      const d = s.run(get(path));
      expect(d.status, path).toBe(403);
      expect(d.body?.error.param, path).toBe(param);
    }
    expect(s.run(get("/newsletters/nl_1/articles", { query: { "status[]": ["draft"] } })).body?.error.param).toBe("status");
    const noAudience = new Session(key({ nl_1: { insights: "read" } }), { nl_1: "owner" });
    expect(noAudience.run(get("/newsletters/nl_1/insights?expand[]=subscriber")).body?.error).toMatchObject({ code: "insufficient_scope", param: "expand" });
    expect(s.run(get("/newsletters/nl_1/articles?status[]=sent")).status).toBe(200);
  });

  // Regression (black-box audit): an expand path needing account: read was never checked.
  it("#7 an expand path that needs account: read is refused without it, and listed in allowed_values with it", () => {
    const config = {
      operations: [{ id: "webhooks.list", method: "GET" as const, path: "/newsletters/{newsletter}/webhooks", needs: "webhooks: read" as const, expand: { owner: "account: read" as const, subscriber: "audience: read" as const } }],
    };
    const without = new Session(key({ nl_1: { webhooks: "read", audience: "read" } }, false), { nl_1: "owner" }, config);
    expect(without.run(get("/newsletters/nl_1/webhooks?expand=owner")).body?.error).toMatchObject({ code: "insufficient_scope", param: "expand", allowed_values: ["subscriber"] });
    const withAccount = new Session(key({ nl_1: { webhooks: "read" } }, true), { nl_1: "owner" }, config);
    expect(withAccount.run(get("/newsletters/nl_1/webhooks?expand=owner")).status).toBe(200);
    expect(withAccount.run(get("/newsletters/nl_1/webhooks?expand=subscriber")).body?.error).toMatchObject({ param: "expand", allowed_values: ["owner"] });
  });
});
