import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", "redis/index": "src/redis/index.ts", "testing/index": "src/testing/index.ts" },
  format: ["esm", "cjs"],
  // One copy of the shared code for both formats: without it the CJS build inlines the core into
  // every entry, so `newsletter-policy/redis` would throw a PolicyConfigError that is not
  // `instanceof` the main entry's class (issue 7). tsup splits ESM by default, CJS only when asked.
  splitting: true,
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node20",
  treeshake: true,
  external: ["fast-check", "immer", "vitest"],
});
