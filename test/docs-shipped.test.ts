/**
 * The docs ship in the npm package (package.json `files`: README.md, docs/*.md), so they must stand
 * on their own for a user holding only the package (issue 7: shipped docs cited the spec's path and
 * test files, and design-document section numbers). Relative links must reach a shipped file; the
 * repository's own files (src/, test/, scripts/, bench/, demo/, .ci/, the design documents) are not
 * named as paths (a link into the source repository by URL is fine).
 */
import { readFileSync, readdirSync } from "node:fs";
import { join, normalize, relative, dirname } from "node:path";
import { describe, expect, it } from "vitest";

const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const docs = readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => join(root, "docs", f));
const shipped = new Set([join(root, "README.md"), join(root, "LICENSE"), ...docs]);

/** Docs owned by engineers rewriting them in parallel (issue 7); self-cleaning as in docs-snippets.test.ts. */
const PENDING: ReadonlyMap<string, string> = new Map([
]);

const REPO_PATH = /(?<![\w/.:-])(?:src|test|scripts|bench|demo|\.ci|shared)\/[\w./*{}-]*/g;
const DESIGN = /DESIGN(?:\.md| §)|newsletter-api-limits-and-permissions\.md/g;

function problems(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  text.split("\n").forEach((line, i) => {
    const where = `${relative(root, file)}:${i + 1}`;
    const withoutUrls = line.replace(/https?:\/\/\S+/g, "");
    for (const m of withoutUrls.matchAll(REPO_PATH)) out.push(`${where}: names a repository file not in the package: ${m[0]}`);
    for (const m of withoutUrls.matchAll(DESIGN)) out.push(`${where}: cites the design documents: ${m[0]}`);
    for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^(https?:|mailto:|#)/.test(target)) continue;
      const path = normalize(join(dirname(file), target.split("#")[0]!));
      if (!shipped.has(path)) out.push(`${where}: links to ${target}, which is not in the package`);
    }
  });
  return out;
}

describe("shipped docs stand on their own", () => {
  it("README.md and docs/*.md link only to shipped files and name no repository-only file or design-document section", () => {
    const all = [...shipped].filter((f) => f.endsWith(".md")).flatMap(problems);
    const pending = (p: string) => PENDING.has(p.slice(0, p.indexOf(":")));
    expect(all.filter((p) => !pending(p)), all.filter((p) => !pending(p)).join("\n")).toEqual([]);
    for (const file of PENDING.keys()) expect(all.some((p) => p.startsWith(`${file}:`)), `${file} is clean now: remove it from PENDING`).toBe(true);
  });
});
