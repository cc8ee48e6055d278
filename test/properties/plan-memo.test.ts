/**
 * The last plan of a plain read, allowed or refused, is handed out again while every input is the
 * same (src/plan.ts `lastPlan`). What must hold: a request planned right after another answers
 * exactly as when its plan is built afresh, whatever came before it, for requests that differ in one
 * input at a time (the path, its query, the newsletter, the role, a grant, account access, the
 * limits, a body, an Idempotency-Key, a host request id), so that no input the checks read is left
 * out of the memo's key: spec §7 #1–#7, §8's input checks and DESIGN §10 all run through it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { emptyUsage, evaluate, type Credential, type Decision, type Grants, type Limits, type PolicyOptions, type PolicyRequest } from "../../src/index.js";
import { arbGrants } from "../../src/testing/arbitraries/credentials.js";
import { withFamilyOf } from "./grants.js";
import { params } from "./settings.js";

const T0 = Date.UTC(2026, 10, 22, 10);
const grants = arbGrants();

/** Requests in groups of the same operation or path, differing in what the checks read. */
const GROUPS: readonly (readonly PolicyRequest[])[] = [
  [
    { method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" },
    { method: "GET", path: "/newsletters/nl_1/subscribers?limit=0" },
    { method: "GET", path: "/newsletters/nl_2/subscribers?limit=100" },
    { method: "GET", path: "/newsletters/nl_1/subscribers?limit=100&limit=100" },
    { method: "GET", path: "/newsletters/nl_1/subscribers", query: { limit: "100" } },
    { method: "GET", path: "/newsletters/nl_1/subscribers?limit=100", requestId: "r-1" },
  ],
  [
    { method: "GET", path: "/newsletters/nl_1/articles?status=sent" },
    { method: "GET", path: "/newsletters/nl_1/articles?status=draft" },
    { method: "GET", path: "/newsletters/nl_1/articles?tag=x" },
    { method: "GET", path: "/newsletters/nl_1/articles?status=sent&status=draft" },
    { method: "GET", path: "/newsletters/nl_1/articles", query: { status: "draft" } },
    { method: "GET", path: "/newsletters/nl_1/articles" },
  ],
  [
    { method: "GET", path: "/newsletters/nl_1/threads?visibility=public" },
    { method: "GET", path: "/newsletters/nl_1/threads?visibility=members" },
    { method: "GET", path: "/newsletters/nl_1/threads" },
    { method: "GET", path: "/newsletters/nl_1/threads/" },
    { method: "HEAD", path: "/newsletters/nl_1/threads" },
    { method: "GET", path: "/newsletters/nl_2/threads?visibility=public" },
  ],
  [
    { method: "GET", path: "/newsletters/nl_1/insights?expand=subscriber" },
    { method: "GET", path: "/newsletters/nl_1/insights" },
    { method: "GET", path: "/newsletters/nl_1/insights?expand=nothing" },
    { method: "GET", path: "/newsletters/nl_1/insights", query: { expand: "subscriber" } },
    { method: "GET", path: "/newsletters/nl_2/insights?expand=subscriber" },
    { method: "GET", path: "/newsletters/nl_1/insights?expand=subscriber&limit=5" },
  ],
  [
    { method: "POST", path: "/tags/t_1/subscribers", newsletter: "nl_1", body: { subscribers: ["s_1"] } },
    { method: "POST", path: "/tags/t_1/subscribers", newsletter: "nl_1" },
    { method: "POST", path: "/tags/t_1/subscribers", newsletter: "nl_2" },
    { method: "POST", path: "/tags/t_1/subscribers", newsletter: "nl_1", idempotencyKey: "k-1" },
    { method: "POST", path: "/tags/t_1/subscribers", newsletter: "nl_1", idempotencyKey: "k-1", body: { subscribers: ["s_1"] } },
    { method: "POST", path: "/tags/t_1/subscribers", newsletter: "nl_1", body: { subscribers: [] } },
  ],
  [
    { method: "POST", path: "/articles/a_1/send", newsletter: "nl_1" },
    { method: "POST", path: "/articles/a_1/send", newsletter: "nl_2" },
    { method: "POST", path: "/articles/a_1/schedule", newsletter: "nl_1" },
    { method: "POST", path: "/articles/a_1/send", newsletter: "nl_1", idempotencyKey: "send-1" },
    { method: "GET", path: "/memberships?limit=10" },
    { method: "GET", path: "/memberships?limit=x" },
  ],
];
/** A host operation whose expand path needs account access (spec §7 #7 with `account: read`). */
const config: PolicyOptions = {
  operations: [
    { id: "reports.list", method: "GET", path: "/newsletters/{newsletter}/reports", needs: "insights: read", expand: { owner: "account: read", audience: "audience: read" } },
    // an editor's cap (settings: read) makes spec §7 #2 of a settings: write grant, #1 of a read one: the same levels, two messages
    { id: "settings.update", method: "PATCH", path: "/newsletters/{newsletter}/settings", needs: "settings: write" },
  ],
};
/** The same operation at other paths (a refusal shows its path), and settings under an editor's cap. */
const SHOWN_GROUP: readonly PolicyRequest[] = [
  { method: "GET", path: "/subscribers/s_1", newsletter: "nl_1" },
  { method: "GET", path: "/subscribers/s_2", newsletter: "nl_1" },
  { method: "GET", path: "/subscribers/s_1", newsletter: "nl_2" },
  { method: "PATCH", path: "/newsletters/nl_1/settings" },
  { method: "PATCH", path: "/newsletters/nl_2/settings" },
  { method: "PATCH", path: "/newsletters/nl_1/settings/" },
];
const HOST_GROUP: readonly PolicyRequest[] = [
  { method: "GET", path: "/newsletters/nl_1/reports?expand=owner" },
  { method: "GET", path: "/newsletters/nl_1/reports?expand=audience" },
  { method: "GET", path: "/newsletters/nl_1/reports" },
  { method: "GET", path: "/newsletters/nl_1/reports", query: { expand: "owner" } },
  { method: "GET", path: "/newsletters/nl_2/reports?expand=owner" },
  { method: "GET", path: "/newsletters/nl_1/reports", query: { expand: ["audience", "owner"] } },
];
const ALL_GROUPS = [...GROUPS, HOST_GROUP, SHOWN_GROUP];
/** Every request of a group after every request of the same group (the same route, or the same path written otherwise). */
const PAIRS: readonly (readonly [PolicyRequest, PolicyRequest])[] = ALL_GROUPS.flatMap((group) => group.flatMap((x) => group.map((y) => [x, y] as const)));
const ALL = ALL_GROUPS.flat();

const role = fc.constantFrom("owner", "admin", "editor", "viewer", "nobody");
const limits = fc.constantFrom<Limits | undefined>(undefined, { budgets: { audience: { limit: 5 } } }, { budgets: { general: { limit: 7 } } });
/** Who asks: the credential's grants (the same on both newsletters), account access, the roles, the limits. */
const who = fc.record({ grants, account: fc.boolean(), role1: role, role2: role, limits });
type Who = typeof who extends fc.Arbitrary<infer T> ? T : never;
const FIELDS = ["grants", "account", "role1", "role2", "limits"] as const;

/** Two askers that differ in one input: where a memo that missed that input would answer wrongly. */
const whoPair: fc.Arbitrary<[Who, Who]> = fc.tuple(who, who, fc.constantFrom(...FIELDS), fc.nat(5)).map(([before, other, field, pick]): [Who, Who] => {
  if (field !== "grants") return [before, { ...before, [field]: other[field] }];
  return [before, { ...before, grants: withFamilyOf(before.grants, other.grants, pick) }];
});

/** What a decision says, its derived request id too (the same inputs and snapshot give the same id, DESIGN §14). */
function said(d: Decision): unknown {
  return { ...d, release: d.release === undefined ? undefined : { ...d.release } };
}

function decide(w: Who, request: PolicyRequest): Decision {
  const credential: Credential = { id: "key_1", kind: "api_key", newsletters: { nl_1: w.grants, nl_2: w.grants }, account: w.account };
  return evaluate(request, { credential, roles: { nl_1: w.role1, nl_2: w.role2 }, usage: emptyUsage(), now: T0, limits: w.limits, config }).decision;
}

/** An allowed plain read no request above can equal (another newsletter): after it, the next plan is built afresh. */
function other(): Decision {
  const credential: Credential = { id: "key_9", kind: "api_key", newsletters: { nl_9: { audience: "read" } } };
  return evaluate({ method: "GET", path: "/newsletters/nl_9/events" }, { credential, roles: { nl_9: "owner" }, usage: emptyUsage(), now: T0, config }).decision;
}

/** `second` decided right after `first`, as it is decided afresh. */
function expectSameAfter(first: () => unknown, second: () => Decision): void {
  first(); // leaves whatever it planned for the next
  const next = said(second());
  expect(other().status).toBe(200);
  expect(next).toEqual(said(second()));
}

describe("plans kept for the next request (src/plan.ts): a plan handed out again is the one a fresh build gives", () => {
  it("every request of a group after every other, for anyone asking: answered as when planned afresh", () => {
    fc.assert(
      fc.property(who, (w) => {
        for (const [x, y] of PAIRS) expectSameAfter(() => decide(w, x), () => decide(w, y));
      }),
      params(1),
    );
  });

  it("any request, asked by two callers who differ in one input: answered as when planned afresh", () => {
    fc.assert(
      fc.property(whoPair, fc.nat(ALL.length - 1), ([before, w], at) => {
        expectSameAfter(() => decide(before, ALL[at]!), () => decide(w, ALL[at]!));
      }),
      params(20),
    );
  });

  const writer: Who = { grants: { content: "write" }, account: false, role1: "owner", role2: "owner", limits: undefined };
  it("spec §5.7, §7 #4: the same path, a reader after a writer, is refused the draft filter the writer was allowed", () => {
    const drafts = GROUPS[1]![1]!;
    expect(decide(writer, drafts).status).toBe(200);
    const reader = decide({ ...writer, grants: { content: "read" } }, drafts);
    expect(reader.status).toBe(403);
    expect(reader.reason).toMatchObject({ rule: "insufficient_scope", case: 4 });
  });

  it("spec §7 #7: the same expand path, after one with account access, without it", () => {
    const owner = HOST_GROUP[0]!;
    const full: Who = { grants: { insights: "read" }, account: true, role1: "owner", role2: "owner", limits: undefined };
    expect(decide(full, owner).status).toBe(200);
    expect(decide({ ...full, account: false }, owner).reason).toMatchObject({ rule: "insufficient_scope", case: 7 });
  });

  it("spec §7 #2 then #1 at the same levels: settings: write then settings: read, both capped at read by an editor", () => {
    const patch = SHOWN_GROUP[3]!;
    const capped: Who = { grants: { settings: "write" }, account: false, role1: "editor", role2: "editor", limits: undefined };
    expect(decide(capped, patch).reason).toMatchObject({ rule: "insufficient_scope", case: 2 });
    const lacking = decide({ ...capped, grants: { settings: "read" } }, patch);
    expect(lacking.reason).toMatchObject({ rule: "insufficient_scope", case: 1 });
    expect(lacking.body?.error.message).not.toContain("caps it");
  });

  it("DESIGN §7: a send for one newsletter after one for another charges the cap of its own", () => {
    const sender: Who = { grants: { sending: "write" }, account: false, role1: "owner", role2: "owner", limits: undefined };
    expect(decide(sender, GROUPS[5]![0]!).newsletter).toBe("nl_1");
    expect(decide(sender, GROUPS[5]![1]!).newsletter).toBe("nl_2");
  });

  it("a refusal handed out again cannot be changed to reach the next decision: its reason, held list and allowed values are frozen", () => {
    const reader: Who = { grants: { content: "read" }, account: false, role1: "owner", role2: "owner", limits: undefined };
    const drafts = GROUPS[1]![1]!; // ?status=draft, spec §7 #4
    const first = decide(reader, drafts);
    expect(first.reason).toMatchObject({ rule: "insufficient_scope", case: 4 });
    const reason = first.reason as { held: string[] };
    expect(Object.isFrozen(reason)).toBe(true);
    expect(() => reason.held.push("content: write")).toThrow(TypeError);
    first.body!.error.allowed_values!.push("draft");
    expect(decide(reader, drafts).body?.error.allowed_values).toEqual(["sent"]);
  });

  it("spec §7 #1: grants that read otherwise a second time (a getter) never leave an allowed plan under another credential's levels (found by a review)", () => {
    const read = GROUPS[0]![0]!; // GET /newsletters/nl_1/subscribers?limit=100, audience: read
    const lacking: Credential = { id: "key_b", kind: "api_key", newsletters: { nl_1: { content: "read" } } };
    const decideFor = (credential: Credential) => evaluate(read, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: T0 }).decision;
    expect(decideFor(lacking).status).toBe(403);
    let reads = 0;
    const shifty = { content: "read" } as Record<string, unknown>;
    Object.defineProperty(shifty, "audience", { enumerable: true, get: () => (reads++ === 0 ? "none" : "read") });
    decideFor({ id: "key_a", kind: "api_key", newsletters: { nl_1: shifty as Grants } });
    expect(decideFor(lacking).status).toBe(403);
  });

  it("a plan handed out again cannot be changed to reach the next decision", () => {
    const reader: Who = { grants: { audience: "read" }, account: false, role1: "owner", role2: "owner", limits: undefined };
    const read = GROUPS[0]![0]!;
    const first = decide(reader, read);
    first.charged.budgets.push("anything");
    (first.headers as Record<string, string>)["RateLimit-Policy"] = "changed";
    expectSameAfter(() => undefined, () => decide(reader, read));
    expect(decide(reader, read).charged.budgets).toEqual(["general", "audience"]);
  });
});
