import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createPolicy, emptyUsage, evaluate, type PolicyRequest, type PolicyStore } from "../../src/index.js";
import { arbConfig, arbCredential, arbRequest, arbRoles } from "../../src/testing/index.js";
import { TIMEOUT, params } from "./settings.js";

const down: PolicyStore = {
  charge: () => Promise.reject(new Error("ECONNREFUSED")),
  release: () => Promise.reject(new Error("ECONNREFUSED")),
  read: () => Promise.reject(new Error("ECONNREFUSED")),
};
const T = Date.UTC(2026, 10, 23, 12);

// The answer a request gets when every counter has room: evaluate on an empty snapshot (no budget
// is spent, no key was used, no cap is reached), i.e. the plan's own answer.
function planned(request: unknown, state: Omit<Parameters<typeof evaluate>[1], "usage" | "now">) {
  return evaluate(request as PolicyRequest, { ...state, usage: emptyUsage(), now: T }).decision;
}

describe("invariants: store failure (DESIGN §12, §1)", () => {
  it("failing open skips counting, never a rule: the answer is the plan's own (same status, code, param), and nothing is charged", async () => {
    await fc.assert(
      fc.asyncProperty(arbRequest(), arbCredential(), arbRoles(), arbConfig(), async ({ request }, credential, roles, config) => {
        // arbConfig carries the host operations arbRequest draws from (EXTRA_OPERATIONS) and their budget
        const policy = createPolicy({ store: down, clock: () => T, config, failOpen: true });
        const d = await policy.check(request, { credential, roles });
        const want = planned(request, { credential, roles, config });
        expect(d.status).toBe(want.status);
        expect(d.body?.error.code).toBe(want.body?.error.code);
        expect(d.body?.error.param).toBe(want.body?.error.param);
        expect(d.charged).toEqual({ budgets: [], caps: [] });
        expect(d.release).toBeUndefined();
      }),
      params(2),
    );
  }, TIMEOUT);

  it("by default a store failure answers 503, except a route refusal (400 malformed, 404 unknown operation), which stands; every answer carries the four RateLimit-* headers and no Retry-After", async () => {
    await fc.assert(
      fc.asyncProperty(arbRequest(), arbCredential(), arbRoles(), arbConfig(), async ({ request }, credential, roles, config) => {
        const d = await createPolicy({ store: down, clock: () => T, config }).check(request, { credential, roles });
        const want = planned(request, { credential, roles, config });
        const route = want.reason.rule === "unknown_operation" || want.reason.rule === "malformed_request";
        expect(d.status).toBe(route ? want.status : 503);
        expect(Object.keys(d.headers).sort()).toEqual(["RateLimit-Limit", "RateLimit-Policy", "RateLimit-Remaining", "RateLimit-Reset"]);
        expect(d.headers["RateLimit-Remaining"]).toBe("0");
        expect(d.charged).toEqual({ budgets: [], caps: [] });
      }),
      params(2),
    );
  }, TIMEOUT);
});
