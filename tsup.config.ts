import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", "redis/index": "src/redis/index.ts", "testing/index": "src/testing/index.ts",
    "adapters/node": "src/adapters/node.ts",
    "adapters/express": "src/adapters/express.ts",
    "adapters/fastify": "src/adapters/fastify.ts",
    "adapters/hono": "src/adapters/hono.ts",
  },
  format: ["esm", "cjs"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node20",
  treeshake: true,
  external: ["fast-check", "immer", "vitest", "express", "fastify", "hono"],
});
