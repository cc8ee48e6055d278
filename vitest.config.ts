import { configDefaults, defineConfig } from "vitest/config";
import { redisTestExcludes } from "./test/redis/availability.js";

// Redis tests skip with one loud line when Redis is missing (they fail under CI=true)
const redisExcludes = await redisTestExcludes();

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["test/setup.ts"],
    exclude: [...configDefaults.exclude, ...redisExcludes],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    fileParallelism: true,
    // the public types' tests (expectTypeOf) are checked by tsc as part of `npm test`
    typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig: "./tsconfig.json" },
  },
});
