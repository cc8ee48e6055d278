/**
 * Operations a host adds (DESIGN §11: the catalogue is data, hosts add method, path template,
 * needed permission, budgets and a cap) follow the same rules as the built-in ones. Found by a
 * mutation review: two rules held only for shapes no built-in operation has, so mutants breaking
 * them survived every test.
 */
import { describe, expect, it } from "vitest";
import { defineConfig, emptyUsage, evaluate, type Credential } from "../src/index.js";
import { T0 } from "./fixtures.js";

describe("a host operation with a daily cap off a {newsletter} path (DESIGN §8, §11; spec §8 daily caps)", () => {
  const config = defineConfig({ docsUrl: "https://example.com/errors", budgets: { general: { limit: 1000, window: 60 }, write: { limit: 1000, window: 60 } }, operations: [{ id: "posts.blast", method: "POST", path: "/posts/{post}/blast", cap: "dispatch", needs: "content: write" }] });
  const credential: Credential = { id: "key_blast", kind: "api_key", newsletters: { nl_1: { content: "write" } } };
  const blast = (i: number, newsletter?: string) => ({ method: "POST", path: `/posts/p_${i}/blast`, ...(newsletter !== undefined && { newsletter }) });

  it("its newsletter is still resolved, reached and capped: 25 dispatches a day, the 26th refused (a mutant that skipped the newsletter step for it sent all 27 uncounted)", () => {
    let usage = emptyUsage();
    const decisions = Array.from({ length: 27 }, (_, i) => {
      const r = evaluate(blast(i, "nl_1"), { credential, roles: { nl_1: "owner" }, usage, now: T0, config });
      usage = r.usage;
      return r.decision;
    });
    expect(decisions[0]!.charged.caps).toEqual(["dispatch"]);
    expect(decisions.map((d) => d.status).slice(-3)).toEqual([200, 429, 429]);
    expect(decisions[25]!.body?.error.message).toMatch(/daily/);
  });

  it("without a stated permission it is refused as a config mistake (DESIGN §11 fails closed): a credential minted for the newsletter with no family at all spent its cap, and a {newsletter} operation without needs let it read (found by a config review)", () => {
    for (const op of [
      { id: "posts.blast", method: "POST", path: "/posts/{post}/blast", cap: "dispatch" },
      { id: "drafts", method: "GET", path: "/newsletters/{newsletter}/drafts" },
    ] as const) {
      expect(() => defineConfig({ operations: [op] })).toThrow(expect.objectContaining({ field: "operations[0].needs" }));
    }
    // an operation on no newsletter needs no permission (a credential is enough), as GET /rate-limit
    expect(() => defineConfig({ operations: [{ id: "ping", method: "GET", path: "/ping" }] })).not.toThrow();
  });

  it("a newsletter the credential does not reach, or none at all, is 404 (DESIGN §8), not allowed", () => {
    const unreached = evaluate(blast(0, "nl_2"), { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0, config });
    const none = evaluate(blast(0), { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0, config });
    expect([unreached.decision.status, none.decision.status]).toEqual([404, 404]);
  });
});

describe("routing: a path with more literal segments wins over one with a parameter there (docs/architecture.md)", () => {
  const get = { id: "reports.get", method: "GET", path: "/newsletters/{newsletter}/reports/{report}", needs: "insights: read" } as const;
  const summary = { id: "reports.summary", method: "GET", path: "/newsletters/{newsletter}/reports/summary", needs: "settings: write", budgets: ["audience"] } as const;
  const credential: Credential = { id: "key_reports", kind: "api_key", newsletters: { nl_1: { insights: "read" } } };

  it("GET …/reports/summary is the summary (403 without settings: write, audience charged), never the report with id 'summary', in either order of the config (a mutant matching parameters first let it through as 200)", () => {
    for (const operations of [[get, summary], [summary, get]]) {
      const config = defineConfig({ docsUrl: "https://example.com/errors", operations });
      const decide = (path: string) => evaluate({ method: "GET", path }, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0, config }).decision;
      const decision = decide("/newsletters/nl_1/reports/summary");
      expect([decision.status, decision.operation]).toEqual([403, "reports.summary"]);
      expect(decision.headers["RateLimit-Policy"]).toContain('"audience"');
      const other = decide("/newsletters/nl_1/reports/r_1");
      expect([other.status, other.operation]).toEqual([200, "reports.get"]);
    }
  });
});
