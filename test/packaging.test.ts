/**
 * Packaging, issue 7: the CommonJS build copied the shared code into every entry, so a
 * PolicyConfigError thrown from `newsletter-policy/redis` was not `instanceof` the main entry's
 * class. The build (tsup.config.ts, as `npm run build` runs it, into a scratch directory) must put
 * the shared code in shared chunks, each module in exactly one output file per format, and every subpath must be reachable under every resolution
 * (`exports`, and `typesVersions` for TypeScript's node10 resolution). attw and publint check the
 * packed tarball in .ci/run.
 */
import { createRequire } from "node:module";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "tsup";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import config from "../tsup.config.js";

const root = new URL("..", import.meta.url).pathname;
// inside the repository, so that the built entries resolve `immer` from its node_modules
const out = join(root, "node_modules", ".cache", `np-packaging-${process.pid}`);
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  exports: Record<string, string | { import: { types: string; default: string }; require: { types: string; default: string } }>;
  typesVersions?: Record<string, Record<string, string[]>>;
  files: string[];
};
const options = Array.isArray(config) ? config[0] : config;
const entries = Object.keys((options as { entry: Record<string, string> }).entry);

beforeAll(async () => {
  mkdirSync(out, { recursive: true });
  // config: false: build exactly the first config (tsup would otherwise also read tsup.config.ts)
  await build({ ...(options as object), config: false, outDir: out, dts: false, sourcemap: true, silent: true, clean: true });
}, 240_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe("one copy of the shared code across entries", () => {
  it("CommonJS: a PolicyConfigError thrown from newsletter-policy/redis is instanceof the main entry's class", () => {
    const require = createRequire(import.meta.url);
    const main = require(join(out, "index.cjs"));
    const redis = require(join(out, "redis", "index.cjs"));
    let thrown: unknown;
    try {
      new redis.RedisStore({});
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(main.PolicyConfigError);
    expect((thrown as { field: string }).field).toBe("redis");
  });

  it("a config defineConfig made in the ESM build decides in the CommonJS build (and back) as in its own, and the errors of either are instanceof the other's classes: a host that loads both (a CommonJS dependency) was refused its config (found by a contract review)", async () => {
    const require = createRequire(import.meta.url);
    const cjs = require(join(out, "index.cjs"));
    const esm = await import(pathToFileURL(join(out, "index.js")).href);
    const request = { method: "GET", path: "/newsletters/nl_1/subscribers" };
    const state = (usage: unknown) => ({ credential: { id: "k_1", kind: "api_key", newsletters: { nl_1: { audience: "read" } } }, roles: { nl_1: "owner" }, usage, now: Date.UTC(2026, 0, 1) });
    for (const [maker, decider] of [[esm, cjs], [cjs, esm]]) {
      const config = maker.defineConfig({ docsUrl: "https://x.test/e", budgets: { audience: { limit: 1, window: 60 } } });
      const first = decider.evaluate(request, { ...state(decider.emptyUsage()), config });
      const second = decider.evaluate(request, { ...state(first.usage), config });
      expect([first.decision.status, second.decision.status, second.decision.headers["RateLimit-Limit"]]).toEqual([200, 429, "1"]);
    }
    // an error either build throws is instanceof both builds' classes (it was only its own build's)
    const fromCjs = (() => {
      try {
        cjs.defineConfig({ budgets: { general: { limit: 0 } } });
      } catch (error) {
        return error;
      }
    })();
    const fromEsm = (() => {
      try {
        esm.defineConfig({ budgets: { general: { limit: 0 } } });
      } catch (error) {
        return error;
      }
    })();
    for (const error of [fromCjs, fromEsm]) {
      expect(error instanceof esm.PolicyConfigError && error instanceof cjs.PolicyConfigError).toBe(true);
      expect((error as { field: string }).field).toBe("budgets.general.limit");
    }
    const redisCjs = require(join(out, "redis", "index.cjs"));
    const redisEsm = await import(pathToFileURL(join(out, "redis", "index.js")).href);
    expect(new redisCjs.RedisTimeoutError(5, "charge") instanceof redisEsm.RedisTimeoutError).toBe(true);
    expect(new redisEsm.RedisOverloadError(64) instanceof redisCjs.RedisOverloadError).toBe(true);
    expect(new redisEsm.RedisOverloadError(64) instanceof redisCjs.RedisTimeoutError).toBe(false);
    expect(new Error("x") instanceof esm.PolicyConfigError).toBe(false);
    // not an object: false, never a TypeError
    for (const value of [null, undefined, "x", 1] as unknown[] as object[]) expect(value instanceof esm.PolicyConfigError || value instanceof redisCjs.RedisTimeoutError).toBe(false);
    // the classes keep their names (a static method naming its class made the bundler rename it _PolicyConfigError)
    for (const [cls, name] of [
      [esm.PolicyConfigError, "PolicyConfigError"],
      [cjs.PolicyConfigError, "PolicyConfigError"],
      [redisEsm.RedisTimeoutError, "RedisTimeoutError"],
      [redisCjs.RedisOverloadError, "RedisOverloadError"],
    ] as const) {
      expect((cls as { name: string }).name).toBe(name);
    }
    expect(require("node:util").inspect(fromEsm)).toMatch(/^PolicyConfigError: newsletter-policy: budgets\.general\.limit/);
    // a subclass a host derives keeps the usual prototype check
    class Mine extends (esm.PolicyConfigError as new (field: string, problem: string) => Error) {}
    expect(new Mine("f", "p") instanceof Mine && new Mine("f", "p") instanceof cjs.PolicyConfigError).toBe(true);
    expect(fromEsm instanceof Mine).toBe(false);
  });

  it("CommonJS: newsletter-policy/testing loads without requiring vitest (which refuses require), and its arbitraries run; vitest is loaded when a conformance suite is described (found by a black-box review)", async () => {
    const require = createRequire(import.meta.url);
    const text = readFileSync(join(out, "testing", "index.cjs"), "utf8");
    expect(text).not.toMatch(/^var \w+ = require\(['"]vitest['"]\);/m);
    const testing = require(join(out, "testing", "index.cjs"));
    const fc = (await import("fast-check")).default;
    const [credential] = fc.sample(testing.arbCredential(), { numRuns: 1, seed: 1 }) as { id: string; kind: string }[];
    expect(["api_key", "oauth"]).toContain(credential!.kind);
    expect(typeof testing.describeStoreConformance).toBe("function");
  });

  it("ESM and CommonJS: without vitest installed, newsletter-policy/testing loads and its arbitraries and runners work; describeStoreConformance says vitest is needed (found by a new-user review: the ESM build imported vitest at the top)", () => {
    // the built package alone in a folder outside the repository, beside fast-check and immer only
    const bare = mkdtempSync(join(tmpdir(), "np-novitest-"));
    try {
      const modules = join(bare, "node_modules");
      cpSync(out, join(modules, "newsletter-policy", "dist"), { recursive: true });
      writeFileSync(join(modules, "newsletter-policy", "package.json"), JSON.stringify({ name: "newsletter-policy", type: "module", exports: { "./testing": { import: "./dist/testing/index.js", require: "./dist/testing/index.cjs" } } }));
      for (const name of ["fast-check", "pure-rand", "immer"]) symlinkSync(join(root, "node_modules", name), join(modules, name), "dir");
      const script = (load: string) => `${load}
const [trace] = fc.sample(testing.arbTrace({ maxSteps: 30 }), { numRuns: 1, seed: 1 });
let said = "";
try { testing.describeStoreConformance("store", () => ({})); } catch (error) { said = error.message; }
console.log(JSON.stringify({ entries: testing.runPureTrace(trace).length, steps: trace.steps.length, said }));`;
      writeFileSync(join(bare, "esm.mjs"), script('import fc from "fast-check"; import * as testing from "newsletter-policy/testing";'));
      writeFileSync(join(bare, "cjs.cjs"), script('const fc = require("fast-check"); const testing = require("newsletter-policy/testing");'));
      for (const file of ["esm.mjs", "cjs.cjs"]) {
        const ran = JSON.parse(execFileSync(process.execPath, [file], { cwd: bare, encoding: "utf8" })) as { entries: number; steps: number; said: string };
        expect(ran.entries, file).toBe(ran.steps);
        expect(ran.said, file).toMatch(/install vitest/);
      }
      // installed but failing to load: its own error, not "install vitest" (the ESM build said so; found by a review)
      const broken = join(modules, "vitest");
      mkdirSync(broken);
      writeFileSync(join(broken, "package.json"), JSON.stringify({ name: "vitest", exports: { import: "./index.mjs", require: "./index.cjs" } }));
      writeFileSync(join(broken, "index.mjs"), 'throw new Error("vitest: broken install");');
      writeFileSync(join(broken, "index.cjs"), 'throw new Error("vitest: broken install");');
      for (const file of ["esm.mjs", "cjs.cjs"]) {
        const ran = JSON.parse(execFileSync(process.execPath, [file], { cwd: bare, encoding: "utf8" })) as { entries: number; steps: number; said: string };
        expect(ran.entries, file).toBe(ran.steps);
        expect(ran.said, file).toMatch(/^vitest: broken install/);
        // the CommonJS build says how to describe the suite from CommonJS
        if (file === "cjs.cjs") expect(ran.said).toContain("test.globals: true");
      }
      // another runner's globals (jest's describe, it, expect, afterEach; no vitest `vi`) are not taken for vitest's
      writeFileSync(join(bare, "jest.cjs"), script('globalThis.describe = globalThis.it = globalThis.expect = globalThis.afterEach = () => {}; const fc = require("fast-check"); const testing = require("newsletter-policy/testing");'));
      const underJest = JSON.parse(execFileSync(process.execPath, ["jest.cjs"], { cwd: bare, encoding: "utf8" })) as { said: string };
      expect(underJest.said).toContain("test.globals: true");
    } finally {
      rmSync(bare, { recursive: true, force: true });
    }
  });

  it("CommonJS: describeStoreConformance describes its suite from a .cjs test file under vitest with globals on (found by a new-user review: require(\"vitest\") always throws there, so the CommonJS build never could)", () => {
    const dir = mkdtempSync(join(root, "node_modules", ".cache", "np-cjs-suite-"));
    try {
      writeFileSync(
        join(dir, "store.test.cjs"),
        `const { MemoryStore } = require(${JSON.stringify(join(out, "index.cjs"))});
const { describeStoreConformance } = require(${JSON.stringify(join(out, "testing", "index.cjs"))});
describeStoreConformance("MemoryStore from CommonJS", () => new MemoryStore(), { numRuns: 3, seed: 1 });`,
      );
      writeFileSync(join(dir, "vitest.config.mjs"), "export default { test: {} };"); // not the repository's config
      const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
      const run = (globals: boolean) =>
        spawnSync(process.execPath, [vitest, "run", "--root", dir, ...(globals ? ["--globals"] : []), "--reporter", "json"], { cwd: dir, encoding: "utf8", env: { ...process.env, CI: "true", FORCE_COLOR: "0" } });
      const withGlobals = run(true);
      const report = JSON.parse(withGlobals.stdout.slice(withGlobals.stdout.indexOf("{"))) as { numPassedTests: number; numFailedTests: number };
      expect(report.numFailedTests, withGlobals.stderr).toBe(0);
      expect(report.numPassedTests).toBeGreaterThan(10);
      // without globals: vitest's own refusal, and what to do
      const without = run(false);
      expect(without.status).not.toBe(0);
      expect(without.stdout + without.stderr).toContain("test.globals: true");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("ESM: the same, across the ESM entries", async () => {
    const main = await import(pathToFileURL(join(out, "index.js")).href);
    const redis = await import(pathToFileURL(join(out, "redis", "index.js")).href);
    expect(() => new redis.RedisStore({})).toThrow(main.PolicyConfigError);
  });

  const files = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? files(join(dir, d.name)) : [join(dir, d.name)]));

  it("no source module is copied: in each format, every file of src/ is in exactly one output file (by the source maps)", () => {
    for (const ext of [".cjs", ".js"]) {
      const owners = new Map<string, string[]>();
      for (const map of files(out).filter((f) => f.endsWith(`${ext}.map`))) {
        for (const source of (JSON.parse(readFileSync(map, "utf8")) as { sources: string[] }).sources) {
          if (!source.includes("src/")) continue;
          const name = source.slice(source.indexOf("src/"));
          owners.set(name, [...(owners.get(name) ?? []), map.slice(out.length + 1)]);
        }
      }
      expect(owners.size, ext).toBeGreaterThan(10);
      const copied = [...owners].filter(([, where]) => where.length > 1);
      expect(copied, `${ext}: modules in more than one output file`).toEqual([]);
    }
  });

  it("each format has its shared chunk and no entry carries the class itself", () => {
    for (const ext of [".cjs", ".js"]) {
      const withClass = files(out).filter((f) => f.endsWith(ext) && /var PolicyConfigError = class/.test(readFileSync(f, "utf8")));
      expect(withClass.map((f) => f.slice(out.length + 1)), ext).toHaveLength(1);
      expect(withClass[0]!.slice(out.length + 1), ext).toMatch(/^chunk-/);
    }
  });
});

describe("every subpath is declared for every resolution", () => {
  const subpaths = Object.keys(pkg.exports).filter((k) => k !== "." && k !== "./package.json");

  it("each tsup entry is exported, and each export is a tsup entry", () => {
    const exported = Object.keys(pkg.exports).filter((k) => k !== "./package.json").map((k) => (k === "." ? "index" : `${k.slice(2)}/index`));
    expect(new Set(exported)).toEqual(new Set(entries));
  });

  it("each subpath has { import, require } × { types, default } and a typesVersions entry (TypeScript's node10 resolution) naming the same .d.ts", () => {
    for (const subpath of subpaths) {
      const target = pkg.exports[subpath];
      expect(typeof target, subpath).toBe("object");
      const t = target as { import: { types: string; default: string }; require: { types: string; default: string } };
      const name = subpath.slice(2);
      expect(t.import).toEqual({ types: `./dist/${name}/index.d.ts`, default: `./dist/${name}/index.js` });
      expect(t.require).toEqual({ types: `./dist/${name}/index.d.cts`, default: `./dist/${name}/index.cjs` });
      expect(pkg.typesVersions?.["*"]?.[name], `typesVersions["*"]["${name}"]`).toEqual([t.import.types]);
    }
  });

  it("the package ships its LICENSE, README and user docs", () => {
    expect(pkg.files).toEqual(expect.arrayContaining(["dist", "LICENSE", "README.md", "docs/*.md"]));
    expect(readFileSync(join(root, "LICENSE"), "utf8")).toMatch(/^MIT License/);
  });
});
