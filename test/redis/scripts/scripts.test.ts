/**
 * The Lua scripts of the Redis store (src/redis/scripts/): each file's SHA-1 literal is the SHA-1
 * of its source, so that a changed script with a stale SHA fails here (EVALSHA would otherwise send
 * one script's SHA for another's source: NOSCRIPT on every call, or worse, the old script). The
 * store hashes nothing at load: `newsletter-policy/redis` needs no `node:crypto`. Needs no Redis.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { indented } from "../../../src/redis/scripts/script.js";
import { CHARGE } from "../../../src/redis/scripts/charge.js";
import { budgetSteps } from "../../../src/redis/scripts/charge-steps.js";
import { DAY_OF, OPEN_WINDOW } from "../../../src/redis/scripts/prelude.js";
import type { Script } from "../../../src/redis/scripts/script.js";

const root = new URL("../../../", import.meta.url).pathname;
const dir = join(root, "src/redis/scripts");

function isScript(value: unknown): value is Script {
  return typeof value === "object" && value !== null && typeof (value as Script).source === "string" && typeof (value as Script).sha === "string";
}

/** Every exported script of every file under src/redis/scripts, by `<file> <export>`. */
async function scripts(): Promise<Map<string, Script>> {
  const found = new Map<string, Script>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
    const module = (await import(join(dir, file))) as Record<string, unknown>;
    for (const [name, value] of Object.entries(module)) if (isScript(value)) found.set(`${file} ${name}`, value);
  }
  return found;
}

/**
 * A script's own lines: `CHARGE_BATCH` runs `CHARGE` as a function (`charge_one`), its source composed
 * in verbatim and indented; that body is checked as `CHARGE`, so here it is one line.
 */
function ownLines(name: string, source: string): string {
  if (name !== "charge-batch.ts CHARGE_BATCH") return source;
  const body = indented(CHARGE.source);
  expect(source, "CHARGE_BATCH composes CHARGE verbatim").toContain(`local function charge_one(KEYS, ARGV)\n${body}\nend\n`);
  return source.replace(body, "  -- CHARGE (scripts/charge.ts), composed in");
}

/** The Lua functions of a source (`local function` at the line's start, to the first `end` there) and the main chunk's lines. */
function shape(source: string): { functions: Map<string, number>; main: number } {
  const functions = new Map<string, number>();
  let main = 0;
  let open: { name: string; from: number } | undefined;
  source.split("\n").forEach((line, i) => {
    const start = /^local function (\w+)/.exec(line);
    if (open === undefined && start !== null) open = { name: start[1]!, from: i };
    else if (open !== undefined && line === "end") {
      functions.set(open.name, i - open.from + 1);
      open = undefined;
    } else if (open === undefined && line.trim() !== "") main++;
  });
  expect(open, "a function that never ends").toBeUndefined();
  return { functions, main };
}

describe("the Redis scripts (src/redis/scripts)", () => {
  it("every script's SHA-1 literal is the SHA-1 of its source (EVALSHA sends the literal, EVAL the source)", async () => {
    const all = await scripts();
    expect([...all.keys()].sort()).toEqual([
      "charge-batch.ts CHARGE_BATCH",
      "charge-plain.ts CHARGE_PLAIN",
      "charge.ts CHARGE",
      "cluster-counted.ts CLUSTER_COUNTED",
      "cluster-release.ts CLUSTER_RELEASE",
      "cluster-renew.ts CLUSTER_RENEW",
      "cluster-step1.ts CLUSTER_STEP1",
      "cluster-step2.ts CLUSTER_STEP2",
      "cluster-undo.ts CLUSTER_UNDO",
      "forget.ts FORGET",
      "read.ts READ",
      "release.ts RELEASE",
      "reset.ts RESET",
    ]);
    for (const [name, script] of all) {
      expect(script.sha, `${name}: stale SHA-1, set it to the SHA-1 of the source`).toBe(createHash("sha1").update(script.source).digest("hex"));
    }
    expect(new Set([...all.values()].map((s) => s.sha)).size, "two scripts with one source").toBe(all.size);
  });

  it("KEYS and ARGV are named once, at the top of each script: no ARGV[n] below the header (the lines before the first blank one)", async () => {
    for (const [name, script] of await scripts()) {
      const lines = ownLines(name, script.source).split("\n");
      expect(lines[0], name).toMatch(/^-- KEYS and ARGV, named \(\w+ in scripts\/[\w-]+\.ts builds them\)$/);
      const blank = lines.findIndex((line) => line.trim() === "");
      // a blank line ends the header, and code follows it: a script of header only would check nothing
      expect(blank, `${name}: a blank line after the header`).toBeGreaterThan(0);
      expect(lines.slice(blank + 1).some((line) => line.trim() !== ""), `${name}: code below the header`).toBe(true);
      expect(lines.slice(blank).filter((line) => line.includes("ARGV[")), name).toEqual([]);
    }
  });

  it("no Lua function, and no script's main chunk, is over 60 lines", async () => {
    for (const [name, script] of await scripts()) {
      const { functions, main } = shape(ownLines(name, script.source));
      expect(main, `${name}: main chunk`).toBeLessThanOrEqual(60);
      for (const [fn, lines] of functions) expect(lines, `${name}: ${fn}`).toBeLessThanOrEqual(60);
    }
  });

  it("each rule is written once and shared by the scripts that need it (a Lua function, or a text run in place), with a comment naming the TypeScript it mirrors", async () => {
    const all = await scripts();
    const defining = (fn: string) => [...all].filter(([, s]) => s.source.includes(`local function ${fn}(`)).map(([name]) => name).sort();
    expect(defining("day_of")).toEqual(["charge-batch.ts CHARGE_BATCH", "charge.ts CHARGE", "cluster-step1.ts CLUSTER_STEP1", "reset.ts RESET"]);
    // a text is indented as deep as where it runs (the batch composes CHARGE in): compared line by line without indent
    const flat = (text: string) => text.split("\n").map((line) => line.trim()).join("\n");
    for (const [name, script] of all) {
      if (script.source.includes("local function day_of(")) expect(flat(script.source), name).toContain(flat(DAY_OF));
    }
    expect(DAY_OF).toContain("-- mirrors dayOf (src/calendar.ts)");
    const holding = (text: string) => [...all].filter(([, s]) => flat(s.source).includes(flat(text))).map(([name]) => name).sort();
    const charging = ["charge-batch.ts CHARGE_BATCH", "charge-plain.ts CHARGE_PLAIN", "charge.ts CHARGE", "cluster-step1.ts CLUSTER_STEP1"];
    expect(holding(OPEN_WINDOW)).toEqual([...charging, "read.ts READ"]);
    // the full layout: CHARGE's and CLUSTER_STEP1's, the batch's through CHARGE composed in; the plain one: CHARGE_PLAIN's and the batch's plain charges'
    expect(holding(budgetSteps("budget"))).toEqual(["charge-batch.ts CHARGE_BATCH", "charge.ts CHARGE", "cluster-step1.ts CLUSTER_STEP1"]);
    expect(holding(budgetSteps("budget", "plain"))).toEqual(["charge-plain.ts CHARGE_PLAIN"]);
    expect(holding(budgetSteps("plain_budget", "plain"))).toEqual(["charge-batch.ts CHARGE_BATCH"]);
    // the two layouts are one text but for where the reply's parts go
    const differing = (a: string, b: string) => a.split("\n").filter((line, i) => line !== b.split("\n")[i]).length;
    expect(differing(budgetSteps("budget"), budgetSteps("budget", "plain"))).toBeLessThanOrEqual(8);
    // readWindow's test of a window is nowhere but in that text: no script has its own copy
    const windowTest = "now < s + (w or win)";
    expect(OPEN_WINDOW).toContain(windowTest);
    for (const [name, script] of all) {
      const copies = script.source.split(windowTest).length - 1;
      expect(copies, name).toBe(flat(script.source).split(flat(OPEN_WINDOW)).length - 1);
    }
    for (const name of [...charging, "read.ts READ"]) expect(all.get(name)!.source).toContain("-- mirrors readWindow (src/charge.ts)");
    for (const name of charging) expect(all.get(name)!.source).toContain("-- mirrors runCharge's budget steps (src/charge.ts)");
    expect(all.get("charge.ts CHARGE")!.source).toContain("-- mirrors runCharge (src/charge.ts)");
    expect(all.get("cluster-step1.ts CLUSTER_STEP1")!.source).toContain("-- mirrors runCharge (src/charge.ts)");
    expect(all.get("charge-plain.ts CHARGE_PLAIN")!.source).toContain("-- runCharge (src/charge.ts), all of it for a request with neither idempotency key nor cap");
    expect(all.get("release.ts RELEASE")!.source).toContain("-- mirrors runRelease (src/charge.ts)");
  });

  it("newsletter-policy/redis imports no Node built-in (no node:crypto): every module it reaches, by its imports", () => {
    const seen = new Set<string>();
    const builtins: string[] = [];
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, "utf8");
      for (const [, spec] of text.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s+"([^"]+)"/gms)) {
        if (spec!.startsWith(".")) visit(resolve(dirname(file), spec!.replace(/\.js$/, ".ts")));
        else if (spec!.startsWith("node:") || ["crypto", "fs", "path", "os", "net", "child_process"].includes(spec!)) builtins.push(`${file.slice(root.length)}: ${spec}`);
      }
    };
    visit(join(root, "src/redis/index.ts"));
    expect(seen.size).toBeGreaterThan(10);
    expect(builtins).toEqual([]);
  });
});
