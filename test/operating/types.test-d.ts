import { describe, expectTypeOf, it } from "vitest";
import type { Credential, Decision, Insurance, Limits, Policy, PolicyStore, RateLimitStatus, ResetRequest, ResetTarget, Usage, Who } from "../../src/index.js";
import { createPolicy, MemoryStore, reset } from "../../src/index.js";

describe("public types of operating", () => {
  it("who.limits has the config's shape, every field optional", () => {
    expectTypeOf<{ budgets: { audience: { limit: 240 } } }>().toMatchTypeOf<Limits>();
    expectTypeOf<{ caps: { dispatch: { limit: 100 } } }>().toMatchTypeOf<Limits>();
    expectTypeOf<{}>().toMatchTypeOf<Limits>();
    expectTypeOf<{ caps: { sends: { limit: 1 } } }>().not.toMatchTypeOf<Limits>();
    expectTypeOf<Who["limits"]>().toEqualTypeOf<Limits | undefined>();
  });

  it("a decision may be degraded (true or absent); status takes the plan's limits, optionally", () => {
    expectTypeOf<Decision["degraded"]>().toEqualTypeOf<true | undefined>();
    expectTypeOf<Policy["status"]>().toEqualTypeOf<(credential: Credential, options?: { limits?: Limits }) => Promise<RateLimitStatus>>();
  });

  it("reset targets one credential or one newsletter; a store's reset is optional", () => {
    expectTypeOf<{ newsletter: "nl_1" }>().toMatchTypeOf<ResetTarget>();
    expectTypeOf<{ credential: { id: "k"; kind: "api_key" } }>().toMatchTypeOf<ResetTarget>();
    expectTypeOf<{ credential: { id: "k" } }>().not.toMatchTypeOf<ResetTarget>();
    expectTypeOf<Policy["reset"]>().returns.toEqualTypeOf<Promise<void>>();
    expectTypeOf(reset).returns.toEqualTypeOf<Usage>();
    expectTypeOf<PolicyStore["reset"]>().toEqualTypeOf<((request: ResetRequest, now: number) => void | Promise<void>) | undefined>();
  });

  it("createPolicy takes insurance, onDecision and onHookError", () => {
    expectTypeOf(createPolicy).toBeCallableWith({ insurance: { store: new MemoryStore(), share: 0.25 }, onDecision: (_d: Decision) => {}, onHookError: () => {} });
    expectTypeOf<Insurance>().toEqualTypeOf<{ readonly store: PolicyStore; readonly share: number }>();
  });
});
