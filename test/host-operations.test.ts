/**
 * Operations a host adds (DESIGN §11: the catalogue is data, hosts add method, path template,
 * needed permission, budgets and a cap) follow the same rules as the built-in ones. Found by a
 * mutation review: two rules held only for shapes no built-in operation has, so mutants breaking
 * them survived every test.
 */
import { describe, expect, it } from "vitest";
import { createPolicy, defineConfig, emptyUsage, evaluate, permitted, type Credential, type PolicyRequest, type PolicyWarning } from "../src/index.js";
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

describe("DESIGN §8, §11: a host operation that needs nothing and names no newsletter in its path (found by a black-box review: DELETE /webhooks/{webhook} without needs let a credential that reached no newsletter through, with any newsletter named)", () => {
  const warnings: PolicyWarning[] = [];
  const config = defineConfig({
    docsUrl: "https://example.com/errors",
    onWarning: (w) => warnings.push(w),
    operations: [
      { id: "webhooks.delete", method: "DELETE", path: "/webhooks/{webhook}" },
      { id: "ping", method: "GET", path: "/ping" },
    ],
  });
  const nobody: Credential = { id: "key_nobody", kind: "api_key", newsletters: {} };
  const member: Credential = { id: "key_member", kind: "api_key", newsletters: { nl_1: { content: "read" } } };
  // a newsletter of any shape: what a host's resolver hands over is untrusted
  const del = (newsletter?: unknown): PolicyRequest => ({ method: "DELETE", path: "/webhooks/w_1", ...(newsletter !== undefined && { newsletter: newsletter as string }) });

  it("where the request names its newsletter, a credential that does not reach it is 404 (not minted for it, no role there now), on both APIs", async () => {
    for (const [credential, roles, newsletter, status] of [
      [nobody, {}, "nl_1", 404],
      [nobody, {}, "nl_9", 404],
      [member, {}, "nl_1", 404], // minted for it, no role there now
      [member, { nl_1: "owner" }, "nl_2", 404],
      [member, { nl_1: "owner" }, "nl_1", 200],
    ] as const) {
      const pure = evaluate(del(newsletter), { credential, roles, usage: emptyUsage(), now: T0, config }).decision;
      const policy = createPolicy({ config, clock: () => T0 });
      const checked = await policy.check(del(newsletter), { credential, roles });
      expect([pure.status, checked.status], `${credential.id} on ${newsletter}`).toEqual([status, status]);
      if (status === 404) expect(pure.body?.error.code).toBe("not_found");
    }
    // a newsletter that cannot be read is 400 naming it, never allowed
    expect(evaluate(del(42), { credential: nobody, roles: {}, usage: emptyUsage(), now: T0, config }).decision.status).toBe(400);
  });

  it("with no newsletter named it needs only a credential, as declared; permitted() lists it as evaluate decides", () => {
    expect(evaluate(del(), { credential: nobody, roles: {}, usage: emptyUsage(), now: T0, config }).decision.status).toBe(200);
    const listed = (credential: Credential, roles: Record<string, string>) => permitted({ credential, roles }, "nl_1", config).operations.find((op) => op.id === "webhooks.delete")!;
    expect(listed(nobody, {})).toMatchObject({ allowed: false, refusal: { status: 404 } });
    expect(listed(member, { nl_1: "owner" })).toMatchObject({ allowed: true });
  });

  it("the host is warned (operation_needs_nothing) of such an operation that writes or takes a resource's id, naming it; not of GET /ping, and never of a built-in", () => {
    const mine = warnings.filter((w) => w.code === "operation_needs_nothing");
    expect(mine).toHaveLength(1);
    expect(mine[0]!.message).toContain("operations[0] (DELETE /webhooks/{webhook})");
    expect(mine[0]!.message).not.toContain("/ping");
    const quiet: PolicyWarning[] = [];
    defineConfig({ docsUrl: "https://example.com/errors", onWarning: (w) => quiet.push(w), operations: [{ id: "ping", method: "GET", path: "/ping" }, { id: "webhooks.delete", method: "DELETE", path: "/webhooks/{webhook}", needs: "webhooks: write" }] });
    defineConfig({ docsUrl: "https://example.com/errors", onWarning: (w) => quiet.push(w) });
    expect(quiet).toEqual([]);
  });
});
