import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", "redis/index": "src/redis/index.ts", "testing/index": "src/testing/index.ts", "client/index": "src/client/index.ts" },
  format: ["esm", "cjs"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node20",
  treeshake: true,
  external: ["fast-check", "immer", "vitest"],
});
