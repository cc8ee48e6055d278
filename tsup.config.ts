import { defineConfig } from "tsup";

/** A `require` for the ESM bin, so that bundled CommonJS (cli-progress) can load Node built-ins. */
const CJS_REQUIRE = ["import { createRequire as cliRequire } from \"node:module\";", "const require = cliRequire(import.meta.url);"].join(" ");

/**
 * The CommonJS build of `newsletter-policy/testing` loads vitest only when a conformance suite is
 * described: vitest refuses to be `require`d, so a top-level `require("vitest")` made the whole
 * entry unloadable from CommonJS, arbitraries and trace runners included (found by a black-box
 * review). Refused so (always, from vitest's CommonJS entry), it takes vitest's globals when the
 * run has them (`test.globals: true`: a CommonJS test file under vitest has no other way to reach
 * vitest either), and otherwise says how to describe the suite (found by a new-user review: the
 * CommonJS build could never describe one). The ESM build imports vitest as written.
 */
const LAZY_VITEST = [
  "let loaded;",
  "const GLOBALS = [\"describe\", \"it\", \"expect\", \"afterEach\"];",
  // vitest's own globals (its `vi` among them), not another runner's describe and expect (jest, mocha: found by a diff review)
  "const hasGlobals = () => typeof globalThis.vi === \"object\" && globalThis.vi !== null && GLOBALS.every((name) => typeof globalThis[name] === \"function\");",
  "const load = () => {",
  "  try { return require(\"vitest\"); } catch (error) {",
  "    if (error && error.code === \"MODULE_NOT_FOUND\") throw new Error(\"newsletter-policy/testing: describeStoreConformance declares vitest tests: install vitest (npm install -D vitest) and run it under vitest; the arbitraries and trace runners need fast-check only\");",
  "    if (hasGlobals()) return globalThis;",
  "    const message = error instanceof Error ? error.message : String(error);",
  "    throw new Error(`${message} (newsletter-policy/testing, CommonJS build: describeStoreConformance needs vitest's describe, it, expect and afterEach; write this test file as ESM (.mjs, .mts, or .ts), or turn on vitest's globals (test.globals: true), which this build then uses)`, { cause: error });",
  "  }",
  "};",
  "const vitest = () => (loaded ??= load());",
  ...["describe", "it", "expect", "afterEach"].map((name) => `export const ${name} = (...args) => vitest().${name}(...args);`),
].join("\n");

const lazyVitestInCommonJs = {
  name: "lazy-vitest-in-commonjs",
  setup(build: { initialOptions: { define?: Record<string, string> }; onResolve: Function; onLoad: Function }) {
    // tsup builds a split CommonJS bundle as ESM first, then converts it: the format comes through `define` (below)
    if (build.initialOptions.define?.__NP_FORMAT__ !== '"cjs"') return;
    build.onResolve({ filter: /vitest-api(\.js)?$/ }, () => ({ path: "vitest-api", namespace: "lazy-vitest" }));
    build.onLoad({ filter: /.*/, namespace: "lazy-vitest" }, () => ({ contents: LAZY_VITEST, loader: "js", resolveDir: "." }));
  },
};

export default defineConfig([
  {
    entry: { index: "src/index.ts", "redis/index": "src/redis/index.ts", "testing/index": "src/testing/index.ts", "client/index": "src/client/index.ts",
      "node/index": "src/adapters/node.ts",
      "express/index": "src/adapters/express.ts",
      "fastify/index": "src/adapters/fastify.ts",
      "hono/index": "src/adapters/hono.ts",
    },
    format: ["esm", "cjs"],
    // One copy of the shared code for both formats: without it the CJS build inlines the core into
    // every entry, so `newsletter-policy/redis` would throw a PolicyConfigError that is not
    // `instanceof` the main entry's class (issue 7). tsup splits ESM by default, CJS only when asked.
    splitting: true,
    dts: true,
    // the bin below builds in parallel into the same folder: leave its file alone
    clean: ["**/*", "!cli.js"],
    sourcemap: true,
    target: "node20",
    treeshake: true,
    external: ["fast-check", "immer", "vitest", "express", "fastify", "hono"],
    esbuildPlugins: [lazyVitestInCommonJs],
    esbuildOptions(options, context) {
      options.define = { ...options.define, __NP_FORMAT__: JSON.stringify(context.format) };
    },
  },
  // The `newsletter-policy` bin: one ESM file; esbuild keeps src/cli/index.ts's shebang and tsup marks it executable.
  {
    entry: { cli: "src/cli/index.ts" },
    format: ["esm"],
    dts: false,
    clean: false,
    sourcemap: false,
    target: "node20",
    platform: "node",
    external: ["immer"],
    // cli-progress (bundled, CommonJS) requires Node built-ins: give the ESM bundle a `require`
    banner: { js: CJS_REQUIRE },
  },
]);
