import { describe, expect, it } from "vitest";
import { emptyUsage, evaluate } from "../../src/index.js";
import { Session, T0, get, key, post } from "../fixtures.js";

const all = key({ nl_1: { content: "write", audience: "write", sending: "write", insights: "read", settings: "write", webhooks: "write" } }, true);

describe("spec §8 rate-limit budgets", () => {
  it("§8.1 a request is charged to every budget it belongs to, counted separately", () => {
    const s = new Session(all, { nl_1: "owner" });
    expect(s.run(get("/newsletters/nl_1/subscribers")).charged.budgets).toEqual(["general", "audience"]);
    expect(s.run(post("/newsletters/nl_1/articles")).charged.budgets).toEqual(["general", "write"]);
    expect(s.run(get("/newsletters/nl_1/articles")).charged.budgets).toEqual(["general"]);
  });

  it("§8.2 general: 600 requests per 60 seconds by default, every request made with the credential", () => {
    const s = new Session(all, { nl_1: "owner" });
    const decisions = s.repeat(601, get("/me"));
    expect(decisions.slice(0, 600).every((d) => d.allowed)).toBe(true);
    expect(decisions[599]!.headers["RateLimit-Remaining"]).toBe("0");
    expect(decisions[600]!.status).toBe(429);
    expect(decisions[0]!.headers["RateLimit-Policy"]).toBe('"general";q=600;w=60');
  });

  it.each([
    ["/newsletters/nl_1/subscribers"],
    ["/subscribers/sub_1"],
    ["/newsletters/nl_1/insights"],
    ["/newsletters/nl_1/events"],
  ])("§8.2 audience: 60 per 60 seconds by default, charged by %s, which also counts against general", (path) => {
    const s = new Session(all, { nl_1: "owner" });
    const decisions = s.repeat(61, get(path, { newsletter: "nl_1" }));
    expect(decisions[0]!.charged.budgets).toEqual(["general", "audience"]);
    expect(decisions.slice(0, 60).every((d) => d.allowed)).toBe(true);
    expect(decisions[60]!.body?.error.message).toContain("audience");
  });

  it.each([
    ["POST", "/newsletters/nl_1/articles"],
    ["PATCH", "/articles/a_1"],
    ["PUT", "/articles/a_1"],
    ["POST", "/tags/t_1/subscribers"],
    ["POST", "/articles/a_1/send"],
    ["POST", "/articles/a_1/schedule"],
    ["POST", "/articles/a_1/test-send"],
  ])("§8.2 write: 60 per 60 seconds by default, charged by every request that changes something (%s %s), which also counts against general", (method, path) => {
    const s = new Session(all, { nl_1: "owner" }, { caps: { dispatch: { limit: 100 }, testSend: { limit: 100 } } });
    const body = path.endsWith("test-send") ? { to: ["a@example.com"] } : { subscribers: ["s_1"] };
    const decisions = s.repeat(61, { method, path, newsletter: "nl_1", body });
    expect(decisions[0]!.charged.budgets).toEqual(["general", "write"]);
    expect(decisions.slice(0, 60).every((d) => d.allowed)).toBe(true);
    expect(decisions[60]!.body?.error.message).toContain("write budget");
  });

  it("§8.2 the defaults may be configured differently", () => {
    const s = new Session(all, { nl_1: "owner" }, { budgets: { general: { limit: 10, window: 5 }, audience: { limit: 3, window: 30 } } });
    const d = s.run(get("/newsletters/nl_1/subscribers"));
    expect(d.headers["RateLimit-Policy"]).toBe('"general";q=10;w=5, "audience";q=3;w=30');
    expect(s.repeat(3, get("/newsletters/nl_1/subscribers")).map((x) => x.status)).toEqual([200, 200, 429]);
  });

  it("§8.3 budgets are per credential, not per IP address", () => {
    const config = { budgets: { audience: { limit: 1, window: 60 } } };
    const a = key({ nl_1: { audience: "read" } }, false, "key_a");
    const b = key({ nl_1: { audience: "read" } }, false, "key_b");
    let usage = emptyUsage();
    const step = (credential: typeof a) => {
      const r = evaluate(get("/newsletters/nl_1/subscribers"), { credential, roles: { nl_1: "owner" }, usage, now: T0, config });
      usage = r.usage;
      return r.decision.status;
    };
    expect([step(a), step(a), step(b), step(b)]).toEqual([200, 429, 200, 429]);
  });

  it("§8.4 when audience is spent the other budgets are unaffected; when general is spent every call is refused", () => {
    const s = new Session(all, { nl_1: "owner" }, { budgets: { general: { limit: 4, window: 60 }, audience: { limit: 1, window: 60 } } });
    s.run(get("/newsletters/nl_1/subscribers"));
    const refused = s.run(get("/newsletters/nl_1/subscribers"));
    expect(refused.status).toBe(429);
    expect(refused.charged.budgets).toEqual([]); // DESIGN §2: a budget refusal charges nothing
    // general has 3 left: the audience refusal did not touch it, and other calls go on
    expect(s.repeat(3, get("/newsletters/nl_1/articles")).map((d) => d.status)).toEqual([200, 200, 200]);
    for (const request of [get("/newsletters/nl_1/articles"), post("/newsletters/nl_1/articles"), get("/me"), get("/rate-limit")]) {
      expect(s.run(request).reason).toMatchObject({ rule: "budget_spent", budget: "general" });
    }
  });

  it("DESIGN §4 fixed windows from the first charged request; an unused budget shows its full size and whole window", () => {
    const s = new Session(all, { nl_1: "owner" }, { budgets: { general: { limit: 2, window: 60 } } });
    s.run(get("/me"));
    s.advance(30);
    expect(s.run(get("/me")).headers["RateLimit-Reset"]).toBe("30");
    expect(s.run(get("/me")).status).toBe(429);
    s.advance(30); // the window started at the first charge and ends 60 s later
    const d = s.run(get("/me"));
    expect(d.allowed).toBe(true);
    expect(d.headers).toMatchObject({ "RateLimit-Remaining": "1", "RateLimit-Reset": "60" });
  });

  it("DESIGN §2 refusals other than a spent budget are charged to every budget of the request", () => {
    const s = new Session(key({ nl_1: { content: "read" } }), { nl_1: "owner" });
    const d = s.run(get("/newsletters/nl_1/subscribers"));
    expect(d.status).toBe(403);
    expect(d.charged.budgets).toEqual(["general", "audience"]);
    expect(d.headers["RateLimit-Remaining"]).toBe("59");
  });

  it("DESIGN §1 route comes before budgets: with general spent, a request that names no operation is 404 and a malformed one 400, charged nothing", () => {
    const s = new Session(all, { nl_1: "owner" }, { budgets: { general: { limit: 1, window: 60 } } });
    s.run(get("/me"));
    expect(s.run(get("/me")).status).toBe(429);
    const before = s.usage;
    const unknown = s.run(get("/newsletters/nl_1/nothing"));
    expect(unknown).toMatchObject({ status: 404, charged: { budgets: [], caps: [] } });
    expect(unknown.headers).not.toHaveProperty("Retry-After");
    expect(s.run(get("/newsletters/../me"))).toMatchObject({ status: 400, charged: { budgets: [], caps: [] } });
    expect(s.usage).toBe(before);
  });
});
