import { describe, expectTypeOf, it } from "vitest";
import type { Decision, ErrorObject, Permission, Requirement, PolicyOptions, Usage } from "../src/index.js";
import { evaluate, createPolicy, defineConfig } from "../src/index.js";

describe("public types", () => {
  it("permissions are literal types: a typo is a compile error", () => {
    expectTypeOf<"audience: read">().toMatchTypeOf<Permission>();
    expectTypeOf<"audience:read">().not.toMatchTypeOf<Permission>();
    expectTypeOf<"account: read">().toMatchTypeOf<Requirement>();
    expectTypeOf<"account: write">().not.toMatchTypeOf<Requirement>();
  });

  it("a decision is a discriminated union: a refusal always has a body, an allowed one never", () => {
    const d = {} as Decision;
    if (d.allowed) expectTypeOf(d.body).toEqualTypeOf<undefined>();
    else expectTypeOf(d.body).toEqualTypeOf<{ error: ErrorObject }>();
  });

  it("evaluate returns a decision and the next usage; createPolicy's check is async", () => {
    expectTypeOf(evaluate).returns.toEqualTypeOf<{ decision: Decision; usage: Usage }>();
    expectTypeOf(createPolicy().check).returns.resolves.toEqualTypeOf<Decision>();
    expectTypeOf(defineConfig).parameter(0).toEqualTypeOf<PolicyOptions | undefined>();
  });
});
