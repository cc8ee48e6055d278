/** The arbitrary of untrusted request descriptors: any shape a host might pass, none of which may make the policy throw. */
import fc from "fast-check";

/**
 * An untrusted descriptor of any shape: `fc.anything()`, odd paths (`..`, `%2e%2e`, `%2F`, bad
 * percent-encoding, control characters, very long), odd methods, repeated and comma-separated query
 * values, wrong body and header types. None of them may make the policy throw.
 *
 * @returns an arbitrary of `unknown`.
 * @example
 * fc.assert(fc.property(arbUntrustedRequest(), (request) => {
 *   evaluate(request, { credential, roles, usage: emptyUsage(), now: 0 }); // never throws
 * }));
 */
export function arbUntrustedRequest(): fc.Arbitrary<unknown> {
  const oddPath = fc.oneof(
    fc.constantFrom(
      "",
      "/",
      "//",
      "newsletters/nl_1/subscribers",
      "/newsletters/../me",
      "/newsletters/nl_1/../nl_2/subscribers",
      "/newsletters/%2e%2e/subscribers",
      "/newsletters/nl_1%2Fx/subscribers",
      "/newsletters/nl%5C1/subscribers",
      "/newsletters/%E0%A4%A/subscribers",
      "/newsletters/%00/subscribers",
      "/newsletters/nl_1/subscribers?limit=%ZZ",
      "/newsletters/nl_1/articles?status=sent&status=draft",
      "/newsletters/nl_1/articles?status=sent,draft&tag=",
      "/newsletters/nl_1/insights?expand=subscriber&expand=subscriber",
      "/newsletters/__proto__/subscribers",
      "/newsletters/constructor/articles",
      "/newsletters/nl_1/subscribers#frag",
      "/me?",
      `/${"a/".repeat(3000)}`,
    ),
    fc.string({ unit: "binary", maxLength: 40 }).map((s) => `/${s}`),
    fc.webPath(),
  );
  const descriptor = fc.record(
    {
      method: fc.oneof(fc.constantFrom("GET", "get", "POST", "HEAD", "PATCH", "", "G E T", "GET\n", "DELETE"), fc.anything()),
      path: fc.oneof({ weight: 3, arbitrary: oddPath }, { weight: 1, arbitrary: fc.anything() }),
      query: fc.oneof(fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.array(fc.string()), fc.anything())), fc.anything()),
      idempotencyKey: fc.anything(),
      body: fc.anything(),
      newsletter: fc.oneof(fc.constantFrom("nl_1", "__proto__", "constructor", ""), fc.anything()),
      requestId: fc.oneof(fc.constantFrom("r_1", "req_1", "has space", ""), fc.anything()),
    },
    { requiredKeys: [] },
  );
  return fc.oneof({ weight: 3, arbitrary: descriptor }, { weight: 1, arbitrary: fc.anything() });
}
