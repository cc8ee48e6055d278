import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { defineConfig, emptyUsage, evaluate, permitted, PolicyConfigError, type Credential, type Permissions } from "../../src/index.js";
import { queryValues } from "../../src/query.js";
import { normaliseRequest } from "../../src/request.js";
import { arbConfig, arbCredential, arbRequest, arbRoles, EXTRA_OPERATIONS } from "../../src/testing/index.js";
import { params } from "../properties/settings.js";

const key = (grants: Credential["newsletters"][string], account = false): Credential => ({ id: "key_1", kind: "api_key", newsletters: { nl_1: grants }, account });
const op = (p: Permissions, id: string) => p.operations.find((o) => o.id === id)!;

describe("permitted: what a credential may do on a newsletter (spec §2, §5, §7 insufficient_scope)", () => {
  it("a newsletter that is not an id is the host's mistake: PolicyConfigError naming newsletter (undefined listed every operation; found by a tools review)", () => {
    for (const newsletter of [undefined, 42, "", null]) {
      expect(() => permitted({ credential: key({ content: "read" }), roles: { nl_1: "owner" } }, newsletter as never)).toThrow(expect.objectContaining({ field: "newsletter" }));
    }
    expect(permitted({ credential: key({ content: "read" }), roles: { nl_1: "owner" } }, "nl_1").view).toBe("reader");
  });

  it("lists every catalogue operation, host operations included, in catalogue order", () => {
    const config = defineConfig({ budgets: { exports: { limit: 5, window: 60 } }, operations: [...EXTRA_OPERATIONS] });
    const p = permitted({ credential: key({ content: "write" }), roles: { nl_1: "owner" } }, "nl_1", config);
    expect(p.operations.map((o) => o.id)).toEqual(config.operations.map((o) => o.id));
    expect(p.operations.every((o) => o.allowed === (o.refusal === undefined))).toBe(true);
  });

  it("each operation is asked about itself: a host operation with literal segments beside the catalogue's templates", () => {
    const config = defineConfig({ operations: [{ id: "campaigns.featured", method: "POST", path: "/campaigns/featured/send", needs: "content: write" }] });
    const p = permitted({ credential: key({ content: "write" }), roles: { nl_1: "owner" } }, "nl_1", config);
    expect(op(p, "campaigns.featured").allowed).toBe(true);
    expect(op(p, "articles.send").refusal).toMatchObject({ case: 1, needs: "sending: write" });
    // a host route that would take requests from a built-in's template is refused (spec §4: the built-in's rules hold for them)
    expect(() => defineConfig({ operations: [{ id: "articles.featured", method: "POST", path: "/articles/featured/send", needs: "content: write" }] })).toThrow(/matches requests of the built-in "articles.send"/);
  });

  it("spec §7 #1: an operation whose family the key lacks is refused with 403 case 1 and the needed permission", () => {
    const p = permitted({ credential: key({ content: "read", insights: "read" }), roles: { nl_1: "owner" } }, "nl_1");
    expect(op(p, "subscribers.list")).toMatchObject({ allowed: false, refusal: { status: 403, code: "insufficient_scope", case: 1, needs: "audience: read" } });
    expect(op(p, "insights.list").allowed).toBe(true);
    expect(op(p, "articles.send").refusal?.message).toContain("POST /articles/{article}/send needs sending: write");
  });

  it("spec §7 #2 and §5.6: a key minted with settings: write under an editor role is refused with case 2", () => {
    const config = defineConfig({ operations: [{ id: "settings.update", method: "PATCH", path: "/newsletters/{newsletter}/settings", needs: "settings: write" }] });
    const p = permitted({ credential: key({ settings: "write", content: "write" }), roles: { nl_1: "editor" } }, "nl_1", config);
    expect(op(p, "settings.update")).toMatchObject({ allowed: false, refusal: { status: 403, case: 2, needs: "settings: write" } });
    expect(op(p, "settings.update").refusal?.message).toContain('current role "editor" caps it at settings: read');
  });

  it("spec §7 #3: account operations need account: read", () => {
    const without = permitted({ credential: key({ content: "read" }), roles: { nl_1: "owner" } }, "nl_1");
    const withIt = permitted({ credential: key({ content: "read" }, true), roles: { nl_1: "owner" } }, "nl_1");
    expect(op(without, "me.get").refusal).toMatchObject({ status: 403, case: 3, needs: "account: read" });
    expect(op(withIt, "me.get").allowed).toBe(true);
    expect(op(without, "rateLimit.get").allowed).toBe(true);
  });

  it("spec §5.7 and §7 #4–#6: a read-only key may filter status by sent, visibility by public, and not use tag", () => {
    const p = permitted({ credential: key({ content: "read" }), roles: { nl_1: "owner" } }, "nl_1");
    expect(p.view).toBe("reader");
    expect(p.filters).toEqual({ "articles.list": { status: ["sent"], tag: [] }, "threads.list": { visibility: ["public"] } });
  });

  it("spec §5.7: write in any family lifts the filter restrictions (full view)", () => {
    const p = permitted({ credential: key({ content: "read", webhooks: "write" }), roles: { nl_1: "admin" } }, "nl_1");
    expect(p.view).toBe("full");
    expect(p.filters).toEqual({ "articles.list": { status: "any", tag: "any" }, "threads.list": { visibility: "any" } });
  });

  it("spec §7 #7: expand=subscriber on insights needs audience: read as well", () => {
    const reader = permitted({ credential: key({ insights: "read" }), roles: { nl_1: "owner" } }, "nl_1");
    const both = permitted({ credential: key({ insights: "read", audience: "read" }), roles: { nl_1: "owner" } }, "nl_1");
    expect(reader.expand).toEqual({ "insights.list": [] });
    expect(both.expand).toEqual({ "insights.list": ["subscriber"] });
  });

  it("spec §5.4: a narrowed role removes permissions at once; no role there: every newsletter operation is not_found and there is no view", () => {
    const credential = key({ content: "write", audience: "write", sending: "write", insights: "read", settings: "write" });
    const analyst = defineConfig({ roles: { analyst: { content: "read", insights: "read" } } });
    const narrowed = permitted({ credential, roles: { nl_1: "analyst" } }, "nl_1", analyst);
    expect(narrowed.view).toBe("reader");
    expect(op(narrowed, "articles.send").refusal).toMatchObject({ status: 403, case: 2, needs: "sending: write" });
    const gone = permitted({ credential, roles: {} }, "nl_1");
    expect(gone.view).toBeUndefined();
    expect(op(gone, "subscribers.list").refusal).toEqual({ status: 404, code: "not_found", message: 'Newsletter "nl_1" was not found for this credential.' });
    expect(op(gone, "rateLimit.get").allowed).toBe(true);
    expect(gone.filters).toEqual({});
  });

  it("DESIGN §10: host mistakes throw PolicyConfigError; the result does not depend on counters and is the same every time", () => {
    expect(() => permitted({ credential: { id: "" } as Credential, roles: {} }, "nl_1")).toThrow(PolicyConfigError);
    expect(() => permitted({ credential: key({}), roles: null as never }, "nl_1")).toThrow(PolicyConfigError);
    const who = { credential: key({ content: "read" }), roles: { nl_1: "owner" } };
    expect(permitted(who, "nl_1")).toEqual(permitted(who, "nl_1"));
  });

  it("property: for every operation and input, permitted agrees with what evaluate answers when no budget or cap is spent", () => {
    fc.assert(
      fc.property(arbConfig({ budgets: "roomy", caps: "roomy" }), arbCredential(), arbRoles(), arbRequest(), (options, credential, roles, { request, operation }) => {
        const config = defineConfig(options);
        if (operation === undefined) return;
        const { decision } = evaluate(request, { credential, roles, usage: emptyUsage(), now: 0, config });
        const reason = decision.reason;
        if (reason.rule === "malformed_request" || reason.rule === "unknown_operation") return;
        expect(decision.operation).toBe(operation);
        if (decision.newsletter === undefined && reason.rule === "no_reach") return; // no newsletter to ask about
        const newsletter = decision.newsletter ?? "nl_1";
        const p = permitted({ credential, roles }, newsletter, config);
        const listed = op(p, operation);
        const normal = normaliseRequest(request);
        if (!("segments" in normal)) throw new Error("a routed request is well formed");
        const sent = (name: string) => queryValues(normal.query, name);
        const why = `${request.method} ${request.path} → ${decision.status} ${JSON.stringify(reason)}; permitted: ${JSON.stringify(listed)}`;
        if (decision.newsletter !== undefined && reason.rule !== "no_reach") expect(p.view, why).toBe(decision.view);

        if (reason.rule === "no_reach" || (reason.rule === "insufficient_scope" && reason.case <= 3)) {
          expect(listed.allowed, why).toBe(false);
          expect(listed.refusal!.status, why).toBe(decision.status);
          expect(listed.refusal!.code, why).toBe(decision.body!.error.code);
          if (reason.rule === "insufficient_scope") {
            expect(listed.refusal, why).toMatchObject({ case: reason.case, needs: reason.needed });
            // the same message, with the path's template where the request had ids
            const template = listed.refusal!.message.replace(/^(\S+) (\S+)/, (_, m) => `${m} ${normal.path}`);
            expect(template.replace(/ on newsletter "[^"]*"/, ""), why).toBe(decision.body!.error.message.replace(/ on newsletter "[^"]*"/, ""));
          } else {
            expect(listed.refusal!.message, why).toBe(decision.body!.error.message);
          }
          return;
        }
        // every other answer means the operation itself is permitted
        expect(listed.allowed, why).toBe(true);
        const filterRefused = reason.rule === "insufficient_scope" && reason.case >= 4 && reason.case <= 6;
        const expandRefused = reason.rule === "insufficient_scope" && reason.case === 7;
        const filters = p.filters[operation] ?? {};
        const filtersOk = Object.entries(filters).every(([name, values]) => values === "any" || sent(name).every((v) => values.includes(v)));
        const expandOk = sent("expand").every((path) => (p.expand[operation] ?? []).includes(path) || !Object.hasOwn(config.operations.find((o) => o.id === operation)!.expand ?? {}, path));
        if (decision.allowed) expect(filtersOk && expandOk, why).toBe(true);
        if (filterRefused) expect(filtersOk, why).toBe(false);
        if (expandRefused) expect(filtersOk && !expandOk, why).toBe(true);
        if (reason.rule === "invalid_input") expect(filtersOk && expandOk, why).toBe(true);
      }),
      params(10),
    );
  });
});

describe("permitted asks a role function once per answer (found by a permissions review)", () => {
  it("a role that changes while permitted runs gives one role to every operation: no view full beside operations refused as not reached", () => {
    let calls = 0;
    const roles = () => (++calls === 1 ? "owner" : undefined);
    const p = permitted({ credential: { id: "k", kind: "api_key", newsletters: { nl_1: { sending: "write" } } }, roles }, "nl_1");
    expect(calls).toBe(1);
    expect(p.view).toBe("full");
    expect(p.operations.find((o) => o.id === "articles.send")).toMatchObject({ allowed: true });
  });
});
