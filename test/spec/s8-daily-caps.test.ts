import { describe, expect, it } from "vitest";
import { emptyUsage, evaluate, release } from "../../src/index.js";
import { usageData } from "../../src/snapshot.js";
import { Session, T0, key, post } from "../fixtures.js";

const sender = (id = "key_1") => key({ nl_1: { sending: "write", content: "write" }, nl_2: { sending: "write" } }, false, id);
const send = (article: string, extra: object = {}) => post(`/articles/${article}/send`, { newsletter: "nl_1", ...extra });
const testSend = (to: string[], extra: object = {}) => post("/articles/a_1/test-send", { newsletter: "nl_1", body: { to }, ...extra });
const roomy = { budgets: { general: { limit: 10_000, window: 60 }, write: { limit: 10_000, window: 60 } } };

describe("spec §8 daily caps", () => {
  it("dispatches: 25 per day by default, per newsletter", () => {
    const s = new Session(sender(), { nl_1: "owner", nl_2: "owner" }, roomy);
    const decisions = Array.from({ length: 26 }, (_, i) => s.run(send(`a_${i}`)));
    expect(decisions.slice(0, 25).every((d) => d.allowed && d.charged.caps[0] === "dispatch")).toBe(true);
    expect(decisions[25]!.status).toBe(429);
    expect(s.run(post("/articles/b_1/send", { newsletter: "nl_2" })).allowed).toBe(true); // another newsletter's cap
  });

  it("dispatches are counted per newsletter across all credentials", () => {
    const config = { ...roomy, caps: { dispatch: { limit: 3 } } };
    let usage = emptyUsage();
    const statuses = ["key_a", "key_b", "key_c", "key_d"].map((id) => {
      const r = evaluate(send("a_1"), { credential: sender(id), roles: { nl_1: "owner" }, usage, now: T0, config });
      usage = r.usage;
      return r.decision.status;
    });
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it("a schedule counts as a send; dispatches count dispatches, not recipients", () => {
    const s = new Session(sender(), { nl_1: "owner" }, { caps: { dispatch: { limit: 2 } } });
    expect(s.run(send("a_1")).charged.caps).toEqual(["dispatch"]);
    expect(s.run(post("/articles/a_2/schedule", { newsletter: "nl_1" })).charged.caps).toEqual(["dispatch"]);
    expect(s.run(send("a_3")).status).toBe(429);
  });

  it("a refused send counts for nothing (403, 400, 404, 409, a budget or cap 429)", () => {
    const s = new Session(sender(), { nl_1: "owner" }, { caps: { dispatch: { limit: 1 } }, budgets: { write: { limit: 100, window: 60 } } });
    s.run(send("a_0", { idempotencyKey: "k_used" })); // fills the cap of 1
    const before = s.usage;
    const refusals = [
      s.run(post("/articles/a_1/send")), // 404: newsletter unresolved
      s.run(post("/articles/a_1/send", { newsletter: "nl_9" })), // 404: not reached
      s.run(send("a_1", { idempotencyKey: "k_used" })), // 409: the key belongs to another path
      s.run(send("a_1", { idempotencyKey: 42 as unknown as string })), // 400: not a key
    ];
    expect(refusals.map((d) => d.status)).toEqual([404, 404, 409, 400]);
    expect(refusals.every((d) => d.charged.caps.length === 0)).toBe(true);
    expect(usageData(s.usage).caps).toEqual(usageData(before).caps);
    const capped = s.run(send("a_2"));
    expect(capped.status).toBe(429);
    expect(capped.charged.caps).toEqual([]);
  });

  it("a refused send does not use up the cap: after 403s the cap still admits its full size", () => {
    const s = new Session(key({ nl_1: { sending: "read" } }), { nl_1: "owner" }, { caps: { dispatch: { limit: 1 } } });
    expect(s.repeat(5, send("a_1")).every((d) => d.status === 403)).toBe(true);
    s.credential = sender();
    expect(s.run(send("a_1")).allowed).toBe(true);
  });

  it("retries use the same Idempotency-Key and count once, and are not refused by the cap", () => {
    const s = new Session(sender(), { nl_1: "owner" }, { caps: { dispatch: { limit: 1 } } });
    const first = s.run(send("a_1", { idempotencyKey: "k1" }));
    const retry = s.run(send("a_1", { idempotencyKey: "k1" }));
    expect(first.charged.caps).toEqual(["dispatch"]);
    expect(retry).toMatchObject({ allowed: true, reason: { rule: "allowed", replay: true } });
    expect(retry.charged.caps).toEqual([]);
    expect(s.run(send("a_2", { idempotencyKey: "k2" })).status).toBe(429);
  });

  it("DESIGN §7 the same key on a different method or path answers conflict (409)", () => {
    const s = new Session(sender(), { nl_1: "owner" });
    s.run(send("a_1", { idempotencyKey: "k1" }));
    const d = s.run(post("/articles/a_1/schedule", { newsletter: "nl_1", idempotencyKey: "k1" }));
    expect(d.status).toBe(409);
    expect(d.body?.error).toMatchObject({ code: "conflict", param: "Idempotency-Key" });
    expect(d.charged).toEqual({ budgets: ["general", "write"], caps: [] });
  });

  it("DESIGN §7 keys are scoped to the credential and live 24 hours", () => {
    const config = { caps: { dispatch: { limit: 10 } } };
    let usage = emptyUsage();
    const run = (id: string, article: string, now: number) => {
      const r = evaluate(send(article, { idempotencyKey: "shared" }), { credential: sender(id), roles: { nl_1: "owner" }, usage, now, config });
      usage = r.usage;
      return r.decision;
    };
    expect(run("key_a", "a_1", T0).status).toBe(200);
    expect(run("key_b", "a_2", T0).status).toBe(200); // another credential's key space
    expect(run("key_a", "a_2", T0 + 3600_000).status).toBe(409);
    expect(run("key_a", "a_2", T0 + 24 * 3600_000).status).toBe(200); // expired: a new request
  });

  it("DESIGN §7 release: a send that failed downstream stops counting, and its key counts again on its next allowed use, not as a replay", () => {
    const s = new Session(sender(), { nl_1: "owner" }, { caps: { dispatch: { limit: 1 } } });
    const sent = s.run(send("a_1", { idempotencyKey: "k1" }));
    expect(sent.release).toBeDefined();
    s.usage = release(s.usage, sent, s.now);
    const again = s.run(send("a_1", { idempotencyKey: "k1" }));
    expect(again.charged.caps).toEqual(["dispatch"]);
    // counted again, so it runs again: not flagged a replay (found by a black-box review: it was, and
    // every adapter answered it from the failed first attempt's stored result)
    expect(again.reason).toEqual({ rule: "allowed" });
    // once counted again, a further retry is a replay of it
    expect(s.run(send("a_1", { idempotencyKey: "k1" })).reason).toEqual({ rule: "allowed", replay: true });
    expect(s.run(send("a_2")).status).toBe(429);
  });

  it("releasing twice uncounts once; releasing a decision with no cap charge returns the same usage", () => {
    const s = new Session(sender(), { nl_1: "owner" }, { caps: { dispatch: { limit: 2 } } });
    const a = s.run(send("a_1"));
    s.run(send("a_2"));
    s.usage = release(s.usage, a, s.now);
    const once = s.usage;
    expect(release(s.usage, a, s.now)).toBe(once);
    expect(s.run(send("a_3")).allowed).toBe(true);
    expect(s.run(send("a_4")).status).toBe(429);
  });

  it("caps reset at the day boundary: midnight UTC by default", () => {
    const s = new Session(sender(), { nl_1: "owner" }, { caps: { dispatch: { limit: 1 } } });
    s.run(send("a_1"));
    s.now = Date.UTC(2026, 10, 22, 23, 59, 59, 999);
    expect(s.run(send("a_2")).status).toBe(429);
    s.now = Date.UTC(2026, 10, 23, 0, 0, 0);
    expect(s.run(send("a_2")).allowed).toBe(true);
  });

  it("the day boundary is configurable (dayStartsAtUtcOffsetMinutes)", () => {
    // a day that starts at 00:00 UTC-08:00, i.e. 08:00 UTC
    const s = new Session(sender(), { nl_1: "owner" }, { caps: { dispatch: { limit: 1 } }, dayStartsAtUtcOffsetMinutes: -480 });
    s.now = Date.UTC(2026, 10, 22, 7, 0, 0);
    s.run(send("a_1"));
    const refused = s.run(send("a_2"));
    expect(refused.headers["Retry-After"]).toBe("1");
    expect(refused.body?.error.message).toContain("00:00 UTC-08:00");
    s.now = Date.UTC(2026, 10, 22, 8, 0, 0);
    expect(s.run(send("a_2")).allowed).toBe(true);
  });

  it("test sends: 50 per day by default, per credential", () => {
    const s = new Session(sender(), { nl_1: "owner" }, roomy);
    const decisions = s.repeat(51, testSend(["a@example.com"]));
    expect(decisions.slice(0, 50).every((d) => d.allowed && d.charged.caps[0] === "testSend")).toBe(true);
    expect(decisions[50]!.status).toBe(429);
    s.credential = sender("key_2");
    expect(s.run(testSend(["a@example.com"])).allowed).toBe(true);
  });

  it("each test-send request counts once whether to has one address or five", () => {
    const s = new Session(sender(), { nl_1: "owner" }, { caps: { testSend: { limit: 2 } } });
    expect(s.run(testSend(["a@x.io", "b@x.io", "c@x.io", "d@x.io", "e@x.io"])).charged.caps).toEqual(["testSend"]);
    expect(s.run(testSend(["a@x.io"])).charged.caps).toEqual(["testSend"]);
    expect(s.run(testSend(["a@x.io"])).status).toBe(429);
  });

  it("a refused test send counts for nothing", () => {
    const s = new Session(sender(), { nl_1: "owner" }, { caps: { testSend: { limit: 1 } } });
    expect(s.run(testSend(["1@x.io", "2@x.io", "3@x.io", "4@x.io", "5@x.io", "6@x.io"])).status).toBe(400);
    expect(s.run(testSend([])).status).toBe(400);
    expect(s.run(testSend(["a@x.io"])).allowed).toBe(true);
  });

  it("daily caps are not budgets in RateLimit-Policy and do not reset with them", () => {
    const s = new Session(sender(), { nl_1: "owner" }, { caps: { dispatch: { limit: 1 } } });
    const d = s.run(send("a_1"));
    expect(d.headers["RateLimit-Policy"]).toBe('"general";q=600;w=60, "write";q=60;w=60');
    s.advance(120); // every budget window has refilled
    expect(s.run(send("a_2")).status).toBe(429);
  });
});
