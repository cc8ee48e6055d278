import { describe, expect, it } from "vitest";
import { Session, get, key, post } from "../fixtures.js";

const all = key({ nl_1: { content: "write", audience: "write", sending: "write", insights: "read" } });

describe("spec §7 rate_limited: status 429, message names the budget or cap, Retry-After whole seconds ≥ 1", () => {
  it("general budget spent: message names general; other budgets may be open but no call can be made", () => {
    const s = new Session(all, { nl_1: "owner" }, { budgets: { general: { limit: 3, window: 60 } } });
    s.repeat(3, get("/newsletters/nl_1/articles"));
    for (const request of [get("/newsletters/nl_1/articles"), get("/newsletters/nl_1/subscribers"), post("/newsletters/nl_1/articles"), get("/rate-limit")]) {
      const d = s.run(request);
      expect(d.status).toBe(429);
      expect(d.body?.error.code).toBe("rate_limited");
      expect(d.body?.error.message).toContain("general");
      expect(d.reason).toMatchObject({ rule: "budget_spent", budget: "general" });
    }
  });

  it("audience budget spent: message names audience; other calls remain possible", () => {
    const s = new Session(all, { nl_1: "owner" }, { budgets: { audience: { limit: 2, window: 60 } } });
    s.repeat(2, get("/newsletters/nl_1/subscribers"));
    const d = s.run(get("/newsletters/nl_1/events"));
    expect(d.status).toBe(429);
    expect(d.body?.error.message).toMatch(/audience budget/);
    expect(d.body?.error.message).not.toMatch(/general/);
    expect(s.run(get("/newsletters/nl_1/articles")).allowed).toBe(true);
    expect(s.run(post("/newsletters/nl_1/articles")).allowed).toBe(true);
  });

  it("retrying: send the same request after Retry-After and not before; a message naming general tells the longer wait of another spent budget", () => {
    const s = new Session(all, { nl_1: "owner" }, { budgets: { general: { limit: 5, window: 10 }, audience: { limit: 5, window: 60 } } });
    s.repeat(5, get("/newsletters/nl_1/subscribers"));
    s.advance(1);
    const d = s.run(get("/newsletters/nl_1/subscribers"));
    expect(d.status).toBe(429);
    expect(d.reason).toMatchObject({ rule: "budget_spent", budget: "general" });
    expect(d.headers["Retry-After"]).toBe("59");
    expect(d.body?.error.message).toContain("refills in 9 s");
    expect(d.body?.error.message).toContain("This request also needs the audience budget, spent as well: send it again after Retry-After (59 s).");
    // one spent budget: its own wait, nothing more said
    s.advance(10);
    const audienceOnly = s.run(get("/newsletters/nl_1/subscribers"));
    expect(audienceOnly.reason).toMatchObject({ rule: "budget_spent", budget: "audience" });
    expect(audienceOnly.body?.error.message).not.toContain("also needs");
    expect(audienceOnly.body?.error.message).toContain(`refills in ${audienceOnly.headers["Retry-After"]} s`);
  });

  it("write budget spent: message names write", () => {
    const s = new Session(all, { nl_1: "owner" }, { budgets: { write: { limit: 1, window: 60 } } });
    s.run(post("/newsletters/nl_1/articles"));
    const d = s.run({ method: "PATCH", path: "/articles/a_1", newsletter: "nl_1" });
    expect(d.status).toBe(429);
    expect(d.body?.error.message).toMatch(/write budget/);
    expect(s.run(get("/newsletters/nl_1/subscribers")).allowed).toBe(true);
  });

  it("daily send cap for a newsletter: raised by send and schedule, message says it is a daily limit", () => {
    const s = new Session(all, { nl_1: "owner" }, { caps: { dispatch: { limit: 2 } } });
    s.run(post("/articles/a_1/send", { newsletter: "nl_1" }));
    s.run(post("/articles/a_2/schedule", { newsletter: "nl_1" }));
    for (const path of ["/articles/a_3/send", "/articles/a_3/schedule"]) {
      const d = s.run(post(path, { newsletter: "nl_1" }));
      expect(d.status).toBe(429);
      expect(d.body?.error.code).toBe("rate_limited");
      expect(d.body?.error.message).toContain("daily limit");
      expect(d.reason).toMatchObject({ rule: "daily_cap", cap: "dispatch", limit: 2, count: 2 });
    }
  });

  it("daily test-send cap: raised by test-send, message says it is a daily limit", () => {
    const s = new Session(all, { nl_1: "owner" }, { caps: { testSend: { limit: 1 } } });
    s.run(post("/articles/a_1/test-send", { newsletter: "nl_1", body: { to: ["a@example.com"] } }));
    const d = s.run(post("/articles/a_1/test-send", { newsletter: "nl_1", body: { to: ["a@example.com"] } }));
    expect(d.status).toBe(429);
    expect(d.body?.error.message).toContain("daily limit");
    expect(d.reason).toMatchObject({ rule: "daily_cap", cap: "testSend" });
  });

  it("Retry-After is always present on a 429, whole seconds, at least 1", () => {
    const s = new Session(all, { nl_1: "owner" }, { budgets: { general: { limit: 1, window: 60 } } });
    s.run(get("/newsletters/nl_1/articles"));
    s.now += 59_999; // 1 ms of the window left
    const d = s.run(get("/newsletters/nl_1/articles"));
    expect(d.headers["Retry-After"]).toBe("1");
  });

  it("for a daily cap Retry-After is measured in hours, rounded up, at least 1 (DESIGN §6)", () => {
    const s = new Session(all, { nl_1: "owner" }, { caps: { dispatch: { limit: 1 } } });
    s.run(post("/articles/a_1/send", { newsletter: "nl_1" }));
    const d = s.run(post("/articles/a_2/send", { newsletter: "nl_1" })); // 10:00 UTC: 14 h to midnight
    expect(d.headers["Retry-After"]).toBe("14");
    expect(d.body?.error.message).toContain("Retry-After is in hours");
    s.now = Date.UTC(2026, 10, 22, 23, 59, 30);
    expect(s.run(post("/articles/a_2/send", { newsletter: "nl_1" })).headers["Retry-After"]).toBe("1");
  });

  it("dailyRetryAfter: seconds emits seconds for clients that read Retry-After per RFC 9110", () => {
    const s = new Session(all, { nl_1: "owner" }, { caps: { dispatch: { limit: 1 } }, dailyRetryAfter: "seconds" });
    s.run(post("/articles/a_1/send", { newsletter: "nl_1" }));
    const d = s.run(post("/articles/a_2/send", { newsletter: "nl_1" }));
    expect(d.headers["Retry-After"]).toBe(String(14 * 3600));
    expect(d.body?.error.message).toContain("Retry-After is in seconds");
  });

  it("retrying: the same request after Retry-After is not refused by a budget that was spent (DESIGN §3: longest wait)", () => {
    const s = new Session(all, { nl_1: "owner" }, { budgets: { general: { limit: 5, window: 10 }, audience: { limit: 1, window: 60 } } });
    s.run(get("/newsletters/nl_1/subscribers"));
    s.repeat(4, get("/newsletters/nl_1/articles"));
    const d = s.run(get("/newsletters/nl_1/subscribers")); // both spent: general (10 s) and audience (60 s)
    expect(d.body?.error.message).toContain("general");
    expect(d.headers["Retry-After"]).toBe("60");
    s.advance(60);
    expect(s.run(get("/newsletters/nl_1/subscribers")).allowed).toBe(true);
  });
});
