/**
 * The vitest functions the conformance suites use, in one place, loaded when this module is and
 * asked for only when a suite is described: without vitest installed, the arbitraries and trace
 * runners still load (a host on node:test, jest or mocha uses them with fast-check alone), and
 * `describeStoreConformance` says what is missing. Importing vitest at the top made the whole entry
 * unloadable without it (found by a new-user review). The CommonJS build replaces this module with
 * one that `require`s vitest on first use (tsup.config.ts `lazyVitestInCommonJs`).
 */
type Vitest = typeof import("vitest");

/** vitest, or why it could not be loaded: not installed (said so), or installed and failing to load (its own error, as the CommonJS build gives it). */
const loaded: Vitest | { readonly failed: unknown } = await import("vitest").catch((error: unknown) => ({ failed: error }));

function vitest(): Vitest {
  if ("failed" in loaded) {
    const code = (loaded.failed as { code?: unknown } | null)?.code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") {
      throw new Error("newsletter-policy/testing: describeStoreConformance declares vitest tests: install vitest (npm install -D vitest) and run it under vitest; the arbitraries and trace runners need fast-check only");
    }
    throw loaded.failed;
  }
  return loaded;
}

export const describe: Vitest["describe"] = ((...args: Parameters<Vitest["describe"]>) => vitest().describe(...args)) as Vitest["describe"];
export const it: Vitest["it"] = ((...args: Parameters<Vitest["it"]>) => vitest().it(...args)) as Vitest["it"];
export const expect: Vitest["expect"] = ((...args: Parameters<Vitest["expect"]>) => vitest().expect(...args)) as Vitest["expect"];
export const afterEach: Vitest["afterEach"] = ((...args: Parameters<Vitest["afterEach"]>) => vitest().afterEach(...args)) as Vitest["afterEach"];
