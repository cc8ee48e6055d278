/** The Hono adapter runs on any runtime with the Fetch API: nothing it loads imports a `node:` module. */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/** Every module a source file loads at run time (type-only imports erase), following relative imports. */
function runtimeImports(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  const source = readFileSync(file, "utf8");
  for (const match of source.matchAll(/^\s*(import|export)\s+(type\s+)?([^;]*?)\s+from\s+"([^"]+)"/gms)) {
    if (match[2] !== undefined) continue; // import type … / export type …
    const specifier = match[4]!;
    if (specifier.startsWith(".")) runtimeImports(resolve(dirname(file), specifier.replace(/\.js$/, ".ts")), seen);
    else seen.add(specifier);
  }
  return seen;
}

describe("the Hono adapter is runtime-neutral", () => {
  it("src/adapters/hono.ts loads no node: module and no framework at run time (hono is imported for types only)", () => {
    const loaded = [...runtimeImports(resolve(import.meta.dirname, "../../src/adapters/hono.ts"))];
    expect(loaded.filter((m) => !m.startsWith("/"))).toEqual([]);
    expect(loaded.some((m) => m.endsWith("/adapters/core.ts"))).toBe(true);
  });

  it("the shared core loads nothing outside the package", () => {
    const loaded = [...runtimeImports(resolve(import.meta.dirname, "../../src/adapters/core.ts"))];
    expect(loaded.filter((m) => !m.startsWith("/"))).toEqual([]);
  });
});
