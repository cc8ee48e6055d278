import { describe, expectTypeOf, it } from "vitest";
import type {
  AllowedDecision,
  BudgetFigures,
  Decision,
  ErrorCode,
  ErrorObject,
  Level,
  Permission,
  PolicyConfig,
  PolicyOptions,
  PolicyRequest,
  RateLimitStatus,
  RefusalStatus,
  RefusedDecision,
  Requirement,
  Usage,
  Who,
} from "../src/index.js";
import { createPolicy, defineConfig, emptyUsage, evaluate, permitted } from "../src/index.js";

const who = {} as Who;
const state = { credential: who.credential, roles: who.roles, usage: emptyUsage(), now: 0 };

describe("public types", () => {
  it("permitted()'s refusal is typed as a decision's is: its status and code are the refusals' own, not number and string (new-user review)", () => {
    type Refusal = NonNullable<ReturnType<typeof permitted>["operations"][number]["refusal"]>;
    expectTypeOf<Refusal["status"]>().toEqualTypeOf<400 | 403 | 404>();
    expectTypeOf<Refusal["code"]>().toMatchTypeOf<ErrorCode>();
    expectTypeOf<Refusal["code"]>().toEqualTypeOf<"invalid_request" | "insufficient_scope" | "not_found">();
  });

  it("a reset target names exactly one of credential or newsletter: both is a compile error, as it is a PolicyConfigError at run time (new-user review)", () => {
    type Target = Parameters<ReturnType<typeof createPolicy>["reset"]>[0];
    const credential = { id: "key_1", kind: "api_key" } as const;
    expectTypeOf({ credential }).toMatchTypeOf<Target>();
    expectTypeOf({ newsletter: "nl_1" }).toMatchTypeOf<Target>();
    expectTypeOf({ credential, newsletter: "nl_1" }).not.toMatchTypeOf<Target>();
  });

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

  it("check and evaluate take a PolicyRequest: a misspelt field (newsletterId) is a compile error, not a 404", () => {
    expectTypeOf(evaluate).parameter(0).toEqualTypeOf<PolicyRequest>();
    expectTypeOf(createPolicy().check).parameter(0).toEqualTypeOf<PolicyRequest>();
    expectTypeOf(createPolicy().check).parameter(1).toEqualTypeOf<Who>();
    const policy = createPolicy();
    // @ts-expect-error newsletterId is not a field of PolicyRequest (newsletter is)
    void policy.check({ method: "POST", path: "/articles/a_1/send", newsletterId: "nl_1" }, who);
    // @ts-expect-error the same typo through the pure API
    evaluate({ method: "POST", path: "/articles/a_1/send", newsletterId: "nl_1" }, state);
    // @ts-expect-error path is required
    evaluate({ method: "GET" }, state);
    // @ts-expect-error idempotencyKey is a string (the header), not a number
    evaluate({ method: "POST", path: "/articles/a_1/send", idempotencyKey: 42 }, state);
    evaluate({ method: "POST", path: "/articles/a_1/send", newsletter: "nl_1", idempotencyKey: "k", body: { any: "json" } }, state);
  });

  it("DESIGN The decision: charged is { budgets: string[]; caps: string[] }, the decision's own lists (they were readonly; found by a black-box review)", () => {
    const d = {} as Decision;
    const charged: { budgets: string[]; caps: string[] } = d.charged;
    expectTypeOf(charged.budgets).toEqualTypeOf<string[]>();
  });

  it("status and error code are literal unions of what the library answers", () => {
    expectTypeOf<Decision["status"]>().toEqualTypeOf<200 | 400 | 403 | 404 | 409 | 429 | 503>();
    expectTypeOf<AllowedDecision["status"]>().toEqualTypeOf<200>();
    expectTypeOf<RefusedDecision["status"]>().toEqualTypeOf<RefusalStatus>();
    expectTypeOf<ErrorObject["code"]>().toEqualTypeOf<ErrorCode>();
    expectTypeOf<ErrorCode>().toEqualTypeOf<"invalid_request" | "insufficient_scope" | "not_found" | "conflict" | "rate_limited" | "service_unavailable">();
    const d = {} as Decision;
    // @ts-expect-error 418 is not a status the policy answers
    if (d.status === 418) return;
    // @ts-expect-error "forbidden" is not a code the policy answers
    if (!d.allowed && d.body.error.code === "forbidden") return;
  });

  it("the public config shows settings, not compiled internals; only defineConfig makes one", () => {
    expectTypeOf<PolicyConfig>().not.toHaveProperty("routes");
    expectTypeOf<PolicyConfig>().not.toHaveProperty("fallback");
    expectTypeOf<PolicyConfig>().not.toHaveProperty("dayOffsetMs");
    expectTypeOf<PolicyConfig["operations"][number]>().not.toHaveProperty("segments");
    expectTypeOf<PolicyConfig>().toHaveProperty("docsUrl").toEqualTypeOf<string>();
    expectTypeOf<PolicyConfig>().toHaveProperty("dayStartsAtUtcOffsetMinutes").toEqualTypeOf<number>();
    const plain = { general: { limit: 1, window: 1 }, audience: { limit: 1, window: 1 }, write: { limit: 1, window: 1 } };
    const caps = { content: "read", audience: "read", sending: "read", insights: "read", settings: "read", webhooks: "read" } as const;
    // @ts-expect-error an object literal is not a compiled config; pass options instead
    const fake: PolicyConfig = { budgets: plain, caps: { dispatch: { limit: 1 }, testSend: { limit: 1 } }, roles: { owner: caps, admin: caps, editor: caps }, docsUrl: "", dailyRetryAfter: "hours", dayStartsAtUtcOffsetMinutes: 0, operations: [] };
    void fake;
  });

  it("the config reads back by name in the shape the options are written in, and is options again (found by a contract review)", () => {
    const config = defineConfig();
    // the spec's budgets and the built-in roles are always there, also under noUncheckedIndexedAccess
    expectTypeOf(config.budgets.general).toEqualTypeOf<Readonly<{ limit: number; window: number }>>();
    expectTypeOf(config.roles.editor.settings).toEqualTypeOf<Level>();
    // a host's budget may be missing: the type says so
    expectTypeOf(config.budgets["burst"]).toEqualTypeOf<Readonly<{ limit: number; window: number }> | undefined>();
    expectTypeOf({ ...config, dailyRetryAfter: "seconds" as const }).toMatchTypeOf<PolicyOptions>();
  });

  it("policy.status names the spec's three budgets (found by a contract review: under noUncheckedIndexedAccess, budgets.general was possibly undefined)", () => {
    expectTypeOf<RateLimitStatus["budgets"]["general"]>().toEqualTypeOf<BudgetFigures>();
  });

  it("the usage snapshot is opaque: no layout to depend on", () => {
    expectTypeOf<Usage>().not.toHaveProperty("windows");
    expectTypeOf<Usage>().not.toHaveProperty("keys");
    // @ts-expect-error a plain object is not a snapshot; start from emptyUsage()
    evaluate({ method: "GET", path: "/me" }, { ...state, usage: { seq: 0, windows: {}, caps: {}, keys: {} } });
  });

  it("the main entry does not export the compiled internals", () => {
    // @ts-expect-error internal: the snapshot's bucket layout
    type B = import("../src/index.js").Buckets<number>;
    // @ts-expect-error internal: MemoryStore's and the snapshot's record of an idempotency key
    type K = import("../src/index.js").KeyRecord;
    // @ts-expect-error internal: an open budget window's record
    type W = import("../src/index.js").WindowRecord;
    // @ts-expect-error internal: a compiled operation
    type C = import("../src/index.js").CompiledOperation;
    expectTypeOf<[B, K, W, C]>().not.toBeNever();
  });
});

describe("DESIGN §7: reason.replay", () => {
  it("reads on any decision's reason without narrowing it first (found by a contract review): true on a flagged replay, undefined otherwise", () => {
    const decision = evaluate({ method: "GET", path: "/me" }, { ...state, credential: who.credential }).decision;
    expectTypeOf(decision.reason.replay).toEqualTypeOf<true | undefined>();
    expectTypeOf(decision.reason?.replay).toEqualTypeOf<true | undefined>();
  });
});
