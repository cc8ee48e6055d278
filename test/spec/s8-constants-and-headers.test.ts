import { describe, expect, it } from "vitest";
import { Session, get, key, post } from "../fixtures.js";

const all = key({ nl_1: { content: "write", audience: "write", sending: "write", insights: "read" } }, true);

describe("spec §8 other constants", () => {
  it("subscribers tagged in one POST /tags/{tag}/subscribers request: at most 500", () => {
    const s = new Session(all, { nl_1: "owner" });
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `sub_${i}`);
    expect(s.run(post("/tags/t_1/subscribers", { newsletter: "nl_1", body: { subscribers: ids(500) } })).allowed).toBe(true);
    const d = s.run(post("/tags/t_1/subscribers", { newsletter: "nl_1", body: { subscribers: ids(501) } }));
    expect(d.status).toBe(400);
    expect(d.body?.error).toMatchObject({ code: "invalid_request", param: "subscribers" });
    expect(d.body?.error.message).toContain("500");
  });

  it("addresses in to of one test-send request: at most 5", () => {
    const s = new Session(all, { nl_1: "owner" });
    const to = (n: number) => Array.from({ length: n }, (_, i) => `p${i}@example.com`);
    expect(s.run(post("/articles/a_1/test-send", { newsletter: "nl_1", body: { to: to(5) } })).allowed).toBe(true);
    const d = s.run(post("/articles/a_1/test-send", { newsletter: "nl_1", body: { to: to(6) } }));
    expect(d.body?.error).toMatchObject({ code: "invalid_request", param: "to" });
    expect(d.body?.error).not.toHaveProperty("allowed_values");
  });

  it("recommended limit on reads against audience is 100: limit=100 is accepted, a non-integer limit is bad input", () => {
    const s = new Session(all, { nl_1: "owner" });
    expect(s.run(get("/newsletters/nl_1/subscribers?limit=100")).allowed).toBe(true);
    for (const bad of ["0", "-1", "ten", "1.5", ""]) {
      expect(s.run(get(`/newsletters/nl_1/subscribers?limit=${bad}`)).body?.error).toMatchObject({ code: "invalid_request", param: "limit" });
    }
    expect(s.run(get("/newsletters/nl_1/subscribers?limit=10&limit=20")).body?.error.param).toBe("limit");
  });
});

describe("spec §8 rate-limit response headers: sent on every response, not only on 429", () => {
  const names = ["RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];

  it("every response, allowed or refused, carries the four RateLimit-* headers; Retry-After only on 429", () => {
    const s = new Session(key({ nl_1: { content: "read" } }), { nl_1: "owner" }, { budgets: { audience: { limit: 1, window: 60 } } });
    const decisions = [
      s.run(get("/newsletters/nl_1/articles")), // 200
      s.run(get("/newsletters/nl_1/subscribers")), // 403
      s.run(get("/newsletters/nl_2/articles")), // 404
      s.run(get("/newsletters/nl_1/articles?limit=x")), // 400
      s.run(get("/nowhere")), // 404 unknown operation
      s.run(get("/newsletters/nl_1/subscribers")), // 429 (the 403 above charged audience)
    ];
    expect(decisions.map((d) => d.status)).toEqual([200, 403, 404, 400, 404, 429]);
    for (const d of decisions) {
      for (const name of names) expect(d.headers[name], `${d.status} ${name}`).toMatch(/\S/);
      expect("Retry-After" in d.headers).toBe(d.status === 429);
    }
  });

  it("RateLimit-Policy: every budget of the request, comma separated, each a quoted name with q=<limit> and w=<window seconds>", () => {
    const s = new Session(all, { nl_1: "owner" });
    expect(s.run(get("/newsletters/nl_1/insights")).headers["RateLimit-Policy"]).toBe('"general";q=600;w=60, "audience";q=60;w=60');
    expect(s.run(post("/newsletters/nl_1/articles")).headers["RateLimit-Policy"]).toBe('"general";q=600;w=60, "write";q=60;w=60');
    expect(s.run(get("/me")).headers["RateLimit-Policy"]).toBe('"general";q=600;w=60');
  });

  it("RateLimit-Limit, -Remaining, -Reset describe the budget closest to running out", () => {
    const s = new Session(all, { nl_1: "owner" });
    const d = s.run(get("/newsletters/nl_1/subscribers"));
    expect(d.headers).toMatchObject({ "RateLimit-Limit": "60", "RateLimit-Remaining": "59", "RateLimit-Reset": "60" });
  });

  it("DESIGN §5 ties on remaining go to the longer reset, then to policy order", () => {
    const s = new Session(all, { nl_1: "owner" }, { budgets: { general: { limit: 5, window: 10 }, audience: { limit: 5, window: 30 } } });
    const d = s.run(get("/newsletters/nl_1/subscribers")); // both 4 left: audience resets later
    expect(d.headers).toMatchObject({ "RateLimit-Limit": "5", "RateLimit-Remaining": "4", "RateLimit-Reset": "30" });
    const same = new Session(all, { nl_1: "owner" }, { budgets: { general: { limit: 5, window: 30 }, write: { limit: 5, window: 30 } } });
    const w = same.run(post("/newsletters/nl_1/articles"));
    expect(w.headers).toMatchObject({ "RateLimit-Limit": "5", "RateLimit-Remaining": "4" });
  });

  it("RateLimit-Reset counts whole seconds until that budget refills, at least 1", () => {
    const s = new Session(all, { nl_1: "owner" });
    s.run(get("/me"));
    s.now += 59_500;
    expect(s.run(get("/me")).headers["RateLimit-Reset"]).toBe("1");
    s.now += 400;
    expect(s.run(get("/me")).headers["RateLimit-Reset"]).toBe("1");
  });

  it("a 429 names the spent budget and reports it in the RateLimit-* headers", () => {
    const s = new Session(all, { nl_1: "owner" }, { budgets: { audience: { limit: 1, window: 60 } } });
    s.run(get("/newsletters/nl_1/subscribers"));
    s.advance(20);
    const d = s.run(get("/newsletters/nl_1/subscribers"));
    expect(d.headers).toMatchObject({ "RateLimit-Limit": "1", "RateLimit-Remaining": "0", "RateLimit-Reset": "40", "Retry-After": "40" });
  });
});
