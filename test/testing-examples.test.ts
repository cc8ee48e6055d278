/**
 * The `@example`s of the testing kit's arbitraries and trace runners run as written: a new user
 * copies them first (the `arbRequest` one threw on its first run: its config lacked the `exports`
 * budget EXTRA_OPERATIONS charge; found by a black-box review). Free names an example leaves to
 * the reader (`credential`, `roles`, `trace`) are given sampled values.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as library from "../src/index.js";
import * as testing from "../src/testing/index.js";

const root = new URL("..", import.meta.url).pathname;
const sources = [...readdirSync(join(root, "src/testing/arbitraries")).map((f) => join("src/testing/arbitraries", f)), "src/testing/run-trace.ts"];

/** Every `@example` block of a file, as code. */
function examples(file: string): string[] {
  const text = readFileSync(join(root, file), "utf8");
  return [...text.matchAll(/@example\n((?:\s*\* .*\n)+?)\s*\*\//g)].map((m) => m[1]!.split("\n").map((line) => line.replace(/^\s*\* ?/, "")).join("\n"));
}

const cases = sources.flatMap((file) => examples(file).map((code, i) => [`${file} #${i + 1}`, code] as const));
const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => (...values: unknown[]) => Promise<unknown>;

beforeAll(() => fc.configureGlobal({ numRuns: 10, seed: 20261127 }));
afterAll(() => fc.resetConfigureGlobal());

describe("the testing kit's examples run as written", () => {
  it("finds the examples", () => expect(cases.length).toBeGreaterThanOrEqual(9));

  it.each(cases)("%s", async (_name, code) => {
    const [trace] = fc.sample(testing.arbTrace(), { numRuns: 1, seed: 1 });
    const scope: Record<string, unknown> = {
      ...library,
      ...testing,
      fc,
      credential: { id: "key_1", kind: "api_key", newsletters: { nl_1: { content: "read" } } },
      roles: { nl_1: "owner" },
      trace,
    };
    const run = new AsyncFunction(...Object.keys(scope), code);
    await run(...Object.values(scope));
  }, 60_000);
});
