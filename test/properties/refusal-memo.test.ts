/**
 * spec §7 #1 and #2 refusals are built once and handed out again while every input is the same
 * (src/permission-checks.ts `checkNeeds`). What must hold: a refusal handed out again is exactly the
 * one a fresh build gives, whatever came before it, and no decision can change another's.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { emptyUsage, evaluate, type Credential, type Decision, type Grants, type PolicyOptions, type PolicyRequest } from "../../src/index.js";
import { withFamilyOf } from "./grants.js";
import { params } from "./settings.js";

const T0 = Date.UTC(2026, 10, 22, 10);
/**
 * The spec's operations and two of settings, where an editor's cap makes spec §7 #2; two host roles
 * with the same caps as an editor, so that only the role's name tells their refusals apart.
 */
const SAME_AS_EDITOR = { content: "write", audience: "write", sending: "write", insights: "write", settings: "read", webhooks: "write" } as const;
const config: PolicyOptions = {
  roles: { reviewer: SAME_AS_EDITOR, auditor: SAME_AS_EDITOR },
  operations: [
    { id: "settings.update", method: "PATCH", path: "/newsletters/{newsletter}/settings", needs: "settings: write" },
    { id: "settings.get", method: "GET", path: "/newsletters/{newsletter}/settings", needs: "settings: read" },
  ],
};
const level = fc.constantFrom(undefined, "read", "write");
const grants: fc.Arbitrary<Grants> = fc
  .record({ content: level, audience: level, sending: level, insights: level, settings: level, webhooks: level })
  .map((g) => Object.fromEntries(Object.entries(g).filter(([, v]) => v !== undefined)) as Grants);

/**
 * Requests in groups; within a group they differ in one thing a refusal shows: the newsletter, the
 * path, the operation at the same path, or only how the request is written (HEAD for GET, a
 * trailing slash), which shows nothing different.
 */
const GROUPS: readonly (readonly PolicyRequest[])[] = [
  [
    { method: "GET", path: "/newsletters/nl_1/subscribers" },
    { method: "GET", path: "/newsletters/nl_2/subscribers" },
    { method: "GET", path: "/newsletters/nl_1/subscribers/" },
  ],
  [
    { method: "POST", path: "/articles/a_1/send", newsletter: "nl_1" },
    { method: "POST", path: "/articles/a_1/send", newsletter: "nl_2" },
    { method: "POST", path: "/articles/a_2/send", newsletter: "nl_1" },
  ],
  [
    { method: "GET", path: "/newsletters/nl_1/insights" },
    { method: "HEAD", path: "/newsletters/nl_1/insights" },
    { method: "GET", path: "/newsletters/nl_2/insights" },
  ],
  [
    { method: "GET", path: "/newsletters/nl_1/articles" },
    { method: "POST", path: "/newsletters/nl_1/articles" },
    { method: "POST", path: "/newsletters/nl_1/subscribers" },
  ],
  [
    { method: "PATCH", path: "/newsletters/nl_1/settings" },
    { method: "PATCH", path: "/newsletters/nl_2/settings" },
    { method: "GET", path: "/newsletters/nl_1/settings" },
  ],
];
const request = fc.record({ group: fc.nat(GROUPS.length - 1), member: fc.nat(2) });
const role = fc.constantFrom("owner", "admin", "editor", "reviewer", "auditor", "viewer");
/** One request: the credential's grants (the same on both newsletters), the request, the roles there. */
const ask = fc.record({ grants, request, role1: role, role2: role });
type Ask = typeof ask extends fc.Arbitrary<infer T> ? T : never;

/**
 * A request, then one that differs from it in one input at most: where a memo that missed an input
 * would answer wrongly. A changed request stays in its group; changed roles often stay alike on
 * both newsletters, so that only the newsletter tells two refusals apart.
 */
const pair: fc.Arbitrary<[Ask, Ask]> = fc
  .tuple(ask, ask, fc.constantFrom("none", "grants", "request", "role1", "role2", "roles"))
  .map(([before, other, field]): [Ask, Ask] => {
    switch (field) {
      case "none":
        return [before, before];
      case "request":
        return [before, { ...before, request: { group: before.request.group, member: other.request.member } }];
      case "roles":
        return [before, { ...before, role1: other.role1, role2: other.role1 }];
      case "grants": {
        // one family's grant changed (read for write, say), the rest kept
        return [before, { ...before, grants: withFamilyOf(before.grants, other.grants, other.request.member * 2 + (other.request.group % 2)) }];
      }
      default:
        return [before, { ...before, [field]: other[field as "role1" | "role2"] }];
    }
  });

/** What a decision says: everything but the request id. */
function said(d: Decision): unknown {
  const { request_id: _id, ...error } = d.body?.error ?? ({} as Record<string, unknown>);
  return { status: d.status, error, reason: d.reason, operation: d.operation, newsletter: d.newsletter };
}

function decide(a: Ask): Decision {
  const credential: Credential = { id: "key_1", kind: "api_key", newsletters: { nl_1: a.grants, nl_2: a.grants } };
  return evaluate(GROUPS[a.request.group]![a.request.member]!, { credential, roles: { nl_1: a.role1, nl_2: a.role2 }, usage: emptyUsage(), now: T0, config }).decision;
}

/** A 403 of spec §7 #1 that no request above can equal (another newsletter): after it, the next refusal is built afresh. */
function other(): Decision {
  const credential: Credential = { id: "key_9", kind: "api_key", newsletters: { nl_9: {} } };
  return evaluate({ method: "GET", path: "/newsletters/nl_9/events" }, { credential, roles: { nl_9: "owner" }, usage: emptyUsage(), now: T0, config }).decision;
}

describe("spec §7 #1, #2: a refusal handed out again is the one a fresh build gives", () => {
  it("after any request, the next is answered exactly as when its refusal is built afresh", () => {
    fc.assert(
      fc.property(pair, ([before, a]) => {
        decide(before); // leaves whatever it refused for the next
        const next = said(decide(a));
        expect(other().status).toBe(403);
        expect(next).toEqual(said(decide(a)));
      }),
      params(10),
    );
  });

  it("#2 then #1 at the same levels: minted with settings: write, then with settings: read, both capped at read by an editor", () => {
    const patch = { group: 4, member: 0 }; // PATCH /newsletters/nl_1/settings
    const capped = decide({ grants: { settings: "write" }, request: patch, role1: "editor", role2: "editor" });
    expect(capped.reason).toMatchObject({ rule: "insufficient_scope", case: 2 });
    const lacking = decide({ grants: { settings: "read" }, request: patch, role1: "editor", role2: "editor" });
    expect(lacking.reason).toMatchObject({ rule: "insufficient_scope", case: 1 });
    expect(lacking.body?.error.message).not.toContain("caps it");
  });

  it("a decision's reason, held list and allowed values cannot be changed to reach the next decision", () => {
    const a: Ask = { grants: { content: "read" }, request: { group: 0, member: 0 }, role1: "owner", role2: "owner" }; // GET /newsletters/nl_1/subscribers
    const first = decide(a);
    expect(first.reason).toMatchObject({ rule: "insufficient_scope", case: 1 });
    const reason = first.reason as { held: string[] };
    expect(Object.isFrozen(reason)).toBe(true);
    expect(() => reason.held.push("audience: write")).toThrow(TypeError);
    first.body!.error.allowed_values!.push("anything");
    const second = decide(a);
    expect(second.body?.error.allowed_values).toEqual(["audience: read"]);
    expect((second.reason as { held: string[] }).held).toEqual(["content: read"]);
  });
});
