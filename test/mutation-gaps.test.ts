/**
 * Rules a mutation review found no test would fail for (each block names the mutant it kills and
 * the spec or DESIGN rule it pins), and one it found broken: an unused budget's reset before 1970.
 * Each block is its own scope: the names each declares are its own.
 */
import { describe, expect, it } from "vitest";
import { createPolicy, defineConfig, emptyUsage, evaluate, MemoryStore, type Credential } from "../src/index.js";


// c7-host-filter-case.test.ts
{
// Mutant C7 (permission-checks.ts checkFilters: default specCase `(allowed.length === 0 ? 5 : 4)` -> `(allowed.length === 0 ? 4 : 5)`).
// Every built-in filter names its specCase, so only a host filter without one reaches the default (catalogue.ts FilterRule doc: "Default: 5 when reader is empty, else 4").

const config = defineConfig({
  docsUrl: "https://docs.example.com/errors",
  operations: [{ id: "drafts.list", method: "GET", path: "/newsletters/{newsletter}/drafts", needs: "content: read", filters: { status: { reader: ["sent"] }, label: { reader: [] } } }],
});
const credential: Credential = { id: "k_c7", kind: "api_key", newsletters: { nl_1: { content: "read" } } };
const run = (q: string) =>
  evaluate({ method: "GET", path: `/newsletters/nl_1/drafts?${q}` }, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: Date.UTC(2026, 0, 1), config }).decision;

describe("spec §7 #4/#5: a host filter without a spec case is case 4 when readers may send values, else 5 (mutant C7)", () => {
  it("a refused value of a filter with reader values is case 4; a filter a reader may not use is case 5", () => {
    expect(run("status=draft").reason).toMatchObject({ rule: "insufficient_scope", case: 4 });
    expect(run("label=x").reason).toMatchObject({ rule: "insufficient_scope", case: 5 });
  });
});
}


// c9-c10-expand-order.test.ts
{
// Mutants C9 (permission-checks.ts checkExpand: `if (!Object.hasOwn(paths, path)) continue;` -> `return undefined;`)
// and C10 (checkExpand judges only `queryValues(request.query, "expand").slice(0, 1)`).

const now = Date.UTC(2026, 0, 1);
const insightsOnly: Credential = { id: "k_c9", kind: "api_key", newsletters: { nl_1: { insights: "read" } } };

describe("DESIGN §1, spec §7 #7: every expand path is judged for permission before any is judged as input (mutants C9, C10)", () => {
  it("expand=nope,subscriber without audience: read is the 403 of spec §7 #7, not a 400 for the unknown path", () => {
    const { decision } = evaluate(
      { method: "GET", path: "/newsletters/nl_1/insights?expand=nope,subscriber" },
      { credential: insightsOnly, roles: { nl_1: "owner" }, usage: emptyUsage(), now },
    );
    expect(decision.status).toBe(403);
    expect(decision.body?.error.param).toBe("expand");
    expect(decision.body?.error.code).toBe("insufficient_scope");
  });

  it("a host operation with two expand paths: the second, not held, is refused (C10 let it through)", () => {
    const config = defineConfig({
      docsUrl: "https://docs.example.com/errors",
      operations: [{ id: "reports.list", method: "GET", path: "/newsletters/{newsletter}/reports", needs: "insights: read", expand: { article: "insights: read", subscriber: "audience: read" } }],
    });
    const { decision } = evaluate(
      { method: "GET", path: "/newsletters/nl_1/reports?expand=article,subscriber" },
      { credential: insightsOnly, roles: { nl_1: "owner" }, usage: emptyUsage(), now, config },
    );
    expect(decision.status).toBe(403);
    expect(decision.body?.error).toMatchObject({ code: "insufficient_scope", param: "expand", allowed_values: ["article"] });
  });
});
}


// ca1-day-offset.test.ts
{
// Mutant CA1 (calendar.ts dayOf: `resetAt: (day + 1) * DAY_MS - offsetMs` -> `+ offsetMs`). Only visible with a configured day start.

const credential: Credential = { id: "k_ca1", kind: "api_key", newsletters: { nl_1: { sending: "write" } } };
const config = defineConfig({ docsUrl: "https://docs.example.com/errors", caps: { dispatch: { limit: 1 } }, dayStartsAtUtcOffsetMinutes: 120 });

describe("DESIGN §6: a day that starts at 00:00 UTC+02:00 ends at 22:00 UTC (mutant CA1)", () => {
  it("at 10:00 UTC a dispatch-cap 429 says Retry-After 12 (hours)", () => {
    const now = Date.UTC(2026, 0, 1, 10);
    let usage = emptyUsage();
    let last;
    for (const a of ["a_1", "a_2"]) {
      const r = evaluate({ method: "POST", path: `/articles/${a}/send`, newsletter: "nl_1" }, { credential, roles: { nl_1: "owner" }, usage, now, config });
      usage = r.usage;
      last = r.decision;
    }
    expect(last!.status).toBe(429);
    expect(last!.headers["Retry-After"]).toBe("12");
  });
});
}


// d4-cap-charged.test.ts
{
// Mutant D4 (decide.ts CHARGES_BUDGETS: `cap_reached: true` -> `false`). DESIGN §2: a daily-cap 429 charges every budget of the request.

const credential: Credential = { id: "k_d4", kind: "api_key", newsletters: { nl_1: { sending: "write" } } };
const config = defineConfig({ docsUrl: "https://docs.example.com/errors", caps: { dispatch: { limit: 1 } } });

describe("DESIGN §2: a daily-cap 429 reports the budgets it charged (mutant D4)", () => {
  it("the second send of a cap of 1 is 429 and its decision lists general and write as charged", () => {
    let usage = emptyUsage();
    const now = Date.UTC(2026, 0, 1, 10);
    const send = (n: number) => {
      const r = evaluate({ method: "POST", path: `/articles/a_${n}/send`, newsletter: "nl_1" }, { credential, roles: { nl_1: "owner" }, usage, now, config });
      usage = r.usage;
      return r.decision;
    };
    expect(send(1).status).toBe(200);
    const refused = send(2);
    expect(refused.status).toBe(429);
    expect(refused.charged).toEqual({ budgets: ["general", "write"], caps: [] });
    expect(refused.headers["RateLimit-Remaining"]).toBe("58"); // write: 60 - 2, the charge is real
  });
});
}


// f3-reason-param.test.ts
{
// Mutant F3 (refusal.ts insufficientScope: `reason.param = param` dropped). The body keeps param; the host-facing reason loses it.

const credential: Credential = { id: "k_f3", kind: "api_key", newsletters: { nl_1: { content: "read" } } };

describe("spec §7 #4: a parameter refusal's reason names the parameter, as its body does (mutant F3)", () => {
  it("a reader's status=draft: reason.param is status, as body.error.param", () => {
    const { decision } = evaluate({ method: "GET", path: "/newsletters/nl_1/articles?status=draft" }, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: Date.UTC(2026, 0, 1) });
    expect(decision.body?.error.param).toBe("status");
    expect(decision.reason).toMatchObject({ rule: "insufficient_scope", case: 4, param: "status" });
  });
});
}


// h1-reset-ceil.test.ts
{
// Mutant H1 (headers.ts resetOf: Math.ceil -> Math.floor). DESIGN §4: reset = whole seconds until the window ends, rounded up, at least 1.

const credential: Credential = { id: "k_h1", kind: "api_key", newsletters: {} };

describe("DESIGN §4: RateLimit-Reset is whole seconds rounded up (mutant H1)", () => {
  it("0.5 s into a 60 s window the reset is 60, not 59", () => {
    const t = Date.UTC(2026, 0, 1);
    const first = evaluate({ method: "GET", path: "/rate-limit" }, { credential, roles: {}, usage: emptyUsage(), now: t });
    const second = evaluate({ method: "GET", path: "/rate-limit" }, { credential, roles: {}, usage: first.usage, now: t + 500 });
    expect(second.decision.headers["RateLimit-Reset"]).toBe("60");
    const late = evaluate({ method: "GET", path: "/rate-limit" }, { credential, roles: {}, usage: first.usage, now: t + 59_500 });
    expect(late.decision.headers["RateLimit-Reset"]).toBe("1");
  });
});
}


// h10-daily-retry-ceil.test.ts
{
// Mutant H10 (headers.ts capRetryAfter: Math.ceil -> Math.round). DESIGN §6: whole hours until the reset, rounded UP.

const credential: Credential = { id: "k_h10", kind: "api_key", newsletters: { nl_1: { sending: "write" } } };
const config = defineConfig({ docsUrl: "https://docs.example.com/errors", caps: { dispatch: { limit: 1 } } });

describe("DESIGN §6, spec §7: a daily cap's Retry-After is whole hours rounded up (mutant H10)", () => {
  it("at 10:40 UTC (13 h 20 min before midnight) Retry-After is 14", () => {
    const now = Date.UTC(2026, 0, 1, 10, 40);
    let usage = emptyUsage();
    for (const a of ["a_1", "a_2"]) {
      const r = evaluate({ method: "POST", path: `/articles/${a}/send`, newsletter: "nl_1" }, { credential, roles: { nl_1: "owner" }, usage, now, config });
      usage = r.usage;
      if (a === "a_2") {
        expect(r.decision.status).toBe(429);
        expect(r.decision.headers["Retry-After"]).toBe("14");
      }
    }
  });
});
}


// l2-limit-digits.test.ts
{
// Mutant L2 (plan.ts isLimit: `digits > 15` -> `digits > 16`). Covered only by test/plan-input.test.ts (not by the spec tests).

const credential: Credential = { id: "k_l2", kind: "api_key", newsletters: { nl_1: { audience: "read" } } };
const run = (limit: string) =>
  evaluate({ method: "GET", path: `/newsletters/nl_1/subscribers?limit=${limit}` }, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: Date.UTC(2026, 0, 1) }).decision;

describe("DESIGN §10: a limit of 16 significant digits is not a whole number a JS number holds exactly: 400 naming limit (mutant L2)", () => {
  it("15 digits pass, 16 digits are 400 invalid_request naming limit", () => {
    expect(run("123456789012345").status).toBe(200);
    const d = run("1234567890123456");
    expect(d.status).toBe(400);
    expect(d.body?.error.param).toBe("limit");
  });
});
}


// l5-null-role.test.ts
{
// Mutant L5 (plan.ts planOnNewsletter: `if (role === undefined || role === null)` -> `if (role === undefined)`).
// A role lookup that found none (null, as host-input.ts allows) is reported as an unknown role name.

const credential: Credential = { id: "k_l5", kind: "api_key", newsletters: { nl_1: { audience: "read" } } };

describe("DESIGN §8: a null role is 'no role now' (mutant L5)", () => {
  it("404, reason.cause no_role", () => {
    const { decision } = evaluate(
      { method: "GET", path: "/newsletters/nl_1/subscribers" },
      { credential, roles: () => null as unknown as string, usage: emptyUsage(), now: Date.UTC(2026, 0, 1) },
    );
    expect(decision.status).toBe(404);
    expect(decision.reason).toMatchObject({ rule: "no_reach", cause: "no_role" });
  });
});
}


// li2-li3-limits.test.ts
{
// Mutants LI2 (limits.ts validate: `for (const name of ["dispatch", "testSend"])` -> `["dispatch"]`, limits.caps.testSend ignored)
// and LI3 (limits.ts withNumbers: `limit === b.limit && window === b.window ? b` -> `limit === b.limit ? b`, a window-only change ignored).
// The suite's limits tests live in test/operating/limits.test.ts, which needs Redis.

const now = Date.UTC(2026, 0, 1, 10);

describe("spec §8 daily caps are defaults: a plan's test-send cap applies in evaluate (mutant LI2)", () => {
  it("limits.caps.testSend.limit 1: the second test send is 429", () => {
    const credential: Credential = { id: "k_li2", kind: "api_key", newsletters: { nl_1: { sending: "write" } } };
    const limits = { caps: { testSend: { limit: 1 } } };
    let usage = emptyUsage();
    const statuses: number[] = [];
    for (const a of ["a_1", "a_2"]) {
      const r = evaluate({ method: "POST", path: `/articles/${a}/test-send`, newsletter: "nl_1", body: { to: ["x@example.com"] } }, { credential, roles: { nl_1: "owner" }, usage, now, limits });
      usage = r.usage;
      statuses.push(r.decision.status);
    }
    expect(statuses).toEqual([200, 429]);
  });
});

describe("spec §8 budgets are defaults: a plan's window-only change applies in evaluate (mutant LI3)", () => {
  it("limits.budgets.audience.window 120 shows in RateLimit-Policy", () => {
    const credential: Credential = { id: "k_li3", kind: "api_key", newsletters: { nl_1: { audience: "read" } } };
    const { decision } = evaluate(
      { method: "GET", path: "/newsletters/nl_1/subscribers" },
      { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now, limits: { budgets: { audience: { window: 120 } } } },
    );
    expect(decision.headers["RateLimit-Policy"]).toBe('"general";q=600;w=60, "audience";q=60;w=120');
  });
});
}


// p8-inherited-grants.test.ts
{
// Mutant P8 (src/permissions.ts ownLevel: `return level !== "none" && hasOwnProperty.call(grants, family) ? level : "none"` -> `return level`).
// test/permissions.test.ts checks effectiveLevels against grantedLevel, which goes through the same ownLevel: a tautology.

describe("spec §5.2: a credential holds only the grants it was minted with: inherited grants grant nothing (mutant P8)", () => {
  it("a grants object whose audience: read is inherited (not own) is refused subscribers.list", () => {
    const grants = Object.create({ audience: "read" }) as Record<string, string>;
    grants.content = "read";
    const credential: Credential = { id: "k_p8", kind: "api_key", newsletters: { nl_1: grants } };
    const { decision } = evaluate(
      { method: "GET", path: "/newsletters/nl_1/subscribers" },
      { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: Date.UTC(2026, 0, 1) },
    );
    expect(decision.status).toBe(403);
    expect(decision.body?.error.code).toBe("insufficient_scope");
  });
});
}


// q1-q3-expand-decoding.test.ts
{
// Mutants Q1 (query.ts decodePart: `+` no longer read as a space) and Q3 (queryValues: values no longer trimmed).
// Both make `expand= subscriber` (as a handler's parser reads `expand=+subscriber` / `expand=%20subscriber`) an unknown path (400)
// instead of the subscriber path judged for permission.

const now = Date.UTC(2026, 0, 1);
const run = (credential: Credential, q: string) =>
  evaluate({ method: "GET", path: `/newsletters/nl_1/insights?${q}` }, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now }).decision;
const both: Credential = { id: "k_q", kind: "api_key", newsletters: { nl_1: { insights: "read", audience: "read" } } };
const insightsOnly: Credential = { id: "k_q2", kind: "api_key", newsletters: { nl_1: { insights: "read" } } };

describe("spec §7 #7: expand values are decoded (+ is a space) and trimmed before they are judged (mutants Q1, Q3)", () => {
  it("expand=+subscriber is the subscriber path: allowed with audience: read, 403 (not 400) without", () => {
    expect(run(both, "expand=+subscriber").status).toBe(200);
    expect(run(insightsOnly, "expand=+subscriber").status).toBe(403);
  });
  it("expand=%20subscriber likewise", () => {
    expect(run(both, "expand=%20subscriber").status).toBe(200);
    expect(run(insightsOnly, "expand=%20subscriber").body?.error.param).toBe("expand");
    expect(run(insightsOnly, "expand=%20subscriber").status).toBe(403);
  });
});
}


// h3-status-at-epoch and the negative clock
{
// Mutant H3 (headers.ts resetOf: `reading.resetAt > now` -> `>=`) differs only at clock 0; before 1970 the
// original read the store's "no window" reading ({ count: 0, resetAt: 0 }) as a reset to come.
describe("DESIGN §4: an unused budget shows its whole window, at clock 0 and before 1970 (mutant H3, and a bug the review found)", () => {
  it.each([0, -10_000])("policy.status at clock %d: general is 600 remaining, reset 60 (before 1970 it gave the seconds to 1970)", async (now) => {
    const policy = createPolicy({ store: new MemoryStore(), clock: () => now });
    const credential: Credential = { id: "k_h3", kind: "api_key", newsletters: {} };
    const body = await policy.status(credential);
    expect(body.budgets.general).toEqual({ limit: 600, remaining: 600, reset: 60 });
  });
});
}
