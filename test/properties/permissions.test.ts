import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { emptyUsage, evaluate, type Credential, type Grants } from "../../src/index.js";
import { arbRequest, arbTrace, EXTRA_OPERATIONS, NEWSLETTER_IDS, PROTOTYPE_NAMES, ROLE_NAMES, runPureTrace } from "../../src/testing/index.js";
import { FAMILIES, OPERATIONS, access, grantOf, isBudget429, queryValuesOf, rank, requests, roleCap } from "./model.js";
import { TIMEOUT, TRACE, params } from "./settings.js";

const refusedForAccess = (status: number) => status === 403 || status === 404;

describe("invariants: permissions (spec §2, §5, §7 insufficient_scope)", () => {
  it("write implies read, for every family and operation: holding write never gets a 403 for the operation's own permission", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          const a = access(trace, entry);
          const need = a?.op.needs;
          if (a?.levels === undefined || need === undefined || need === "account: read") continue;
          const family = need.split(":")[0] as (typeof FAMILIES)[number];
          if (a.levels[family] !== "write") continue;
          const reason = entry.decision.reason;
          expect(reason.rule === "insufficient_scope" && (reason.case === 1 || reason.case === 2), `${entry.request.method} ${entry.request.path} with ${family}: write`).toBe(false);
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("write implies read, as monotony: raising every read grant to write never turns an answer into a 403", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          if (entry.decision.status === 403) continue;
          const raised: Credential = {
            ...entry.credential,
            newsletters: Object.fromEntries(
              Object.entries(entry.credential.newsletters).map(([n, g]) => [n, Object.fromEntries(Object.entries(g).map(([f, l]) => [f, l === "read" ? "write" : l])) as Grants]),
            ),
          };
          const { decision } = evaluate(entry.request, { credential: raised, roles: entry.roles, usage: entry.before!, now: entry.now, config: trace.config });
          expect(decision.status, `${entry.request.method} ${entry.request.path}`).not.toBe(403);
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("the effective level is the lesser of grant and role cap: a 403 for the operation's permission exactly when that is below the need, and `held` never above either", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          const a = access(trace, entry);
          const need = a?.op.needs;
          if (a?.levels === undefined || need === undefined || need === "account: read" || isBudget429(entry.decision)) continue;
          const [family, level] = need.split(": ") as [(typeof FAMILIES)[number], "read" | "write"];
          const reason = entry.decision.reason;
          const refusedForNeed = reason.rule === "insufficient_scope" && (reason.case === 1 || reason.case === 2);
          expect(refusedForNeed, `${entry.request.method} ${entry.request.path}: effective ${family} ${a.levels[family]}, needs ${level}`).toBe(rank(a.levels[family]) < rank(level));
          if (reason.rule === "insufficient_scope") {
            for (const held of reason.held) {
              const [f, l] = held.split(": ") as [(typeof FAMILIES)[number], "read" | "write"];
              expect(rank(l)).toBeLessThanOrEqual(rank(grantOf(entry.credential, a.newsletter!, f)));
              expect(rank(l)).toBeLessThanOrEqual(rank(a.caps![f]));
            }
            // case 2 (spec §7 #2): minted with the family, capped by the role now
            if (refusedForNeed) expect(reason.case).toBe(rank(grantOf(entry.credential, a.newsletter!, family)) >= rank(level) ? 2 : 1);
          }
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("narrowing a role never widens anything: under any narrower role (or none) no refused request is let through and no reader becomes full", () => {
    fc.assert(
      fc.property(arbTrace({ ...TRACE, maxSteps: 200 }), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          const a = access(trace, entry);
          if (a?.newsletter === undefined) continue;
          const current = Object.hasOwn(entry.roles, a.newsletter) ? entry.roles[a.newsletter] : undefined;
          const wide = roleCap(trace.config, current);
          for (const candidate of [...ROLE_NAMES, undefined]) {
            const narrow = roleCap(trace.config, candidate);
            const narrower = narrow === undefined || (wide !== undefined && FAMILIES.every((f) => rank(narrow[f]) <= rank(wide[f])));
            if (!narrower || candidate === current) continue;
            const roles = { ...entry.roles };
            if (candidate === undefined) delete roles[a.newsletter];
            else roles[a.newsletter] = candidate;
            const { decision } = evaluate(entry.request, { credential: entry.credential, roles, usage: entry.before!, now: entry.now, config: trace.config });
            if (refusedForAccess(entry.decision.status)) expect(refusedForAccess(decision.status), `${current} → ${candidate}: ${entry.request.path}`).toBe(true);
            if (decision.view === "full") expect(entry.decision.view).toBe("full");
          }
        }
      }),
      params(0.5),
    );
  }, TIMEOUT);

  it("a role change takes effect on the next request without a new key: every decision equals that of a key minted with the lesser of grant and current role", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        const log = runPureTrace(trace);
        for (const entry of requests(log)) {
          const a = access(trace, entry);
          if (a?.levels === undefined || isBudget429(entry.decision)) continue;
          // the owner's role now, applied on this very request: same as a fresh key holding the capped levels under an owner
          const minted: Credential = { ...entry.credential, newsletters: { ...entry.credential.newsletters, [a.newsletter!]: { ...a.levels } } };
          const { decision } = evaluate(entry.request, { credential: minted, roles: { ...entry.roles, [a.newsletter!]: "owner" }, usage: entry.before!, now: entry.now, config: trace.config });
          const shape = (d: typeof decision) => ({ status: d.status, view: d.view, param: d.body?.error.param, allowed: d.body?.error.allowed_values, charged: d.charged });
          expect(shape(decision), `${entry.request.method} ${entry.request.path} under ${entry.roles[a.newsletter!]}`).toEqual(shape(entry.decision));
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("a credential that reaches only some newsletters is refused with 404 on the others (not granted, no role, unknown role)", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          const a = access(trace, entry);
          if (a === undefined || isBudget429(entry.decision)) continue;
          if (!a.reached) expect(entry.decision.status, `${entry.request.method} ${entry.request.path} (${a.newsletter})`).toBe(404);
          else expect(entry.decision.status).not.toBe(404);
          if (!a.reached) {
            expect(entry.decision.body?.error.code).toBe("not_found");
            // and for the right cause: an own grant, then an own role, then a role the config knows
            const granted = a.newsletter !== undefined && Object.hasOwn(entry.credential.newsletters, a.newsletter);
            const role = a.newsletter !== undefined && Object.hasOwn(entry.roles, a.newsletter) ? entry.roles[a.newsletter] : undefined;
            const cause = a.newsletter === undefined ? "unresolved" : !granted ? "not_granted" : role === undefined ? "no_role" : "unknown_role";
            expect(entry.decision.reason).toMatchObject({ rule: "no_reach", cause });
          }
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("object-prototype names (__proto__, constructor, toString, hasOwnProperty, …) as newsletter ids never match a grant or a role", () => {
    // every real newsletter granted in full, with an owner role: only the prototype could lend a match
    const owner = Object.fromEntries(NEWSLETTER_IDS.map((n) => [n, "owner"]));
    const everything: Credential = { id: "key_1", kind: "api_key", account: true, newsletters: Object.fromEntries(NEWSLETTER_IDS.map((n) => [n, Object.fromEntries(FAMILIES.map((f) => [f, "write"]))])) };
    fc.assert(
      fc.property(arbRequest(), fc.constantFrom(...PROTOTYPE_NAMES), fc.boolean(), (generated, name, asFunction) => {
        const op = generated.operation === undefined ? undefined : OPERATIONS.get(generated.operation);
        if (op === undefined) return;
        const request = { ...generated.request };
        if (op.path.includes("{newsletter}")) request.path = request.path.replace(/^\/newsletters\/[^/?]+/, `/newsletters/${encodeURIComponent(name)}`);
        else request.newsletter = name;
        const roles = asFunction ? (n: string) => (owner as Record<string, string>)[n] : owner;
        const { decision } = evaluate(request, { credential: everything, roles, usage: emptyUsage(), now: 0, config: { budgets: { exports: { limit: 10, window: 60 } }, operations: [...EXTRA_OPERATIONS] } });
        if (op.needs === "account: read" || (!op.path.includes("{newsletter}") && op.needs === undefined)) return;
        expect(decision.status, `${request.method} ${request.path} newsletter=${request.newsletter}`).toBe(404);
        // Found by mutation testing: a role lookup without hasOwn went unseen, because the grant check
        // refused first. Granted as an own id, the name must still find no role on the prototype...
        const named: Credential = { ...everything, newsletters: Object.defineProperty({ ...everything.newsletters }, name, { value: everything.newsletters[NEWSLETTER_IDS[0]!], enumerable: true }) };
        const state = { credential: named, usage: emptyUsage(), now: 0, config: { budgets: { exports: { limit: 10, window: 60 } }, operations: [...EXTRA_OPERATIONS] } };
        const unroled = evaluate(request, { ...state, roles }).decision;
        expect(unroled.status).toBe(404);
        // (a roles function is the host's own lookup: what it returns for the name is its business)
        if (!asFunction) expect(unroled.reason).toMatchObject({ rule: "no_reach", cause: "no_role" });
        // ... and an own role of that name is an ordinary role
        const ownRole = Object.defineProperty({ ...owner }, name, { value: "owner", enumerable: true });
        expect(evaluate(request, { ...state, roles: asFunction ? (n: string) => (Object.hasOwn(ownRole, n) ? ownRole[n] : undefined) : ownRole }).decision.status).not.toBe(404);
      }),
      params(5),
    );
  }, TIMEOUT);

  // Found by mutation testing: dropping the expand check, or applying the reader filters to every
  // credential, survived every property (the spec tables caught them only for their own examples).
  it("filters and expand paths (spec §5.7, §7 #4–#7): a 403 for a filter exactly when the view is reader and a value is outside what a reader may send; for expand exactly when a path needs more than is held", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          const a = access(trace, entry);
          if (a === undefined || a.levels === undefined || isBudget429(entry.decision)) continue;
          const levels = a.levels;
          const holds = (need: string) => {
            if (need === "account: read") return entry.credential.account === true;
            const [family, level] = need.split(": ") as [(typeof FAMILIES)[number], "read" | "write"];
            return rank(levels[family]) >= rank(level);
          };
          if (a.op.needs !== undefined && !holds(a.op.needs)) continue; // #1/#2 decide first
          const readOnly = FAMILIES.every((f) => levels[f] !== "write");
          // the engine's order: the reader filters (in the catalogue's order), then expand paths
          let want: { case: number; param: string; allowed: string[] | undefined } | undefined;
          for (const [name, rule] of Object.entries(a.op.filters ?? {})) {
            if (want !== undefined || !readOnly) break;
            if (queryValuesOf(entry.request, name, true).some((v) => !rule.reader.includes(v))) {
              want = { case: rule.specCase ?? (rule.reader.length === 0 ? 5 : 4), param: name, allowed: rule.reader.length === 0 ? undefined : [...rule.reader] };
            }
          }
          const paths = a.op.expand ?? {};
          for (const path of queryValuesOf(entry.request, "expand")) {
            if (want !== undefined) break;
            if (Object.hasOwn(paths, path) && !holds(paths[path]!)) {
              const allowed = Object.keys(paths).filter((p) => holds(paths[p]!));
              want = { case: 7, param: "expand", allowed: allowed.length === 0 ? undefined : allowed };
            }
          }
          const reason = entry.decision.reason;
          const got = reason.rule === "insufficient_scope" && reason.case >= 4 ? reason.case : undefined;
          const where = `${entry.request.method} ${entry.request.path} ${JSON.stringify(entry.request.query ?? {})}, reader ${readOnly}`;
          expect(got, where).toBe(want?.case);
          if (want !== undefined) {
            expect(entry.decision.body!.error.param, where).toBe(want.param);
            expect(entry.decision.body!.error.allowed_values, where).toEqual(want.allowed);
          }
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("read-only (spec §5.7): the view is reader exactly when the credential holds no write in any family there after the role cap", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          const a = access(trace, entry);
          if (a?.levels === undefined) continue;
          const readOnly = FAMILIES.every((f) => a.levels![f] !== "write");
          expect(entry.decision.view, entry.request.path).toBe(readOnly ? "reader" : "full");
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("account operations need account: read: 403 (spec §7 #3) exactly when the credential lacks it, whatever it holds on newsletters", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          const op = entry.operation === undefined ? undefined : OPERATIONS.get(entry.operation);
          if (op?.needs !== "account: read" || isBudget429(entry.decision)) continue;
          const reason = entry.decision.reason;
          expect(reason.rule === "insufficient_scope" && reason.case === 3, entry.request.path).toBe(entry.credential.account !== true);
        }
      }),
      params(),
    );
  }, TIMEOUT);
});
