/**
 * The vitest functions the conformance suites use, in one place. The CommonJS build replaces this
 * module with one that loads vitest on first use (tsup.config.ts `lazyVitestInCommonJs`): vitest
 * refuses to be `require`d, and a top-level `require("vitest")` made the whole testing entry
 * unloadable from CommonJS, arbitraries and trace runners included.
 */
export { afterEach, describe, expect, it } from "vitest";
