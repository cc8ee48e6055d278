import { describe, expectTypeOf, it } from "vitest";
import type { FetchLike, ResponseLike } from "../../src/client/index.js";
import { retryDelay, withRetry } from "../../src/client/index.js";
import { permitted, type FilterValues, type Permissions, type PermittedOperation, type Requirement } from "../../src/index.js";

describe("public types of permitted and the client", () => {
  it("permitted returns operations with a refusal carrying the spec §7 case and the needed permission", () => {
    expectTypeOf(permitted).returns.toEqualTypeOf<Permissions>();
    expectTypeOf<Permissions["view"]>().toEqualTypeOf<"reader" | "full" | undefined>();
    expectTypeOf<NonNullable<PermittedOperation["refusal"]>["needs"]>().toEqualTypeOf<Requirement | undefined>();
    expectTypeOf<FilterValues>().toEqualTypeOf<"any" | readonly string[]>();
  });

  it("retryDelay takes a Fetch Response and answers ms or undefined; withRetry keeps fetch's signature", () => {
    expectTypeOf<Response>().toMatchTypeOf<ResponseLike>();
    expectTypeOf(retryDelay).returns.toEqualTypeOf<number | undefined>();
    expectTypeOf(withRetry(fetch)).toEqualTypeOf<FetchLike>();
    expectTypeOf(fetch).toMatchTypeOf<FetchLike>();
  });
});
