/**
 * Runs anywhere the Fetch API does: the BUILT core entry (dist/index.js, with immer, bundled into
 * one ESM file by esbuild for the browser platform — which fails on any Node built-in) replays the
 * demo's day in headless Chromium, and every decision must equal Node's. The same browser opens the
 * CLI's --html report and reads its summary, and drives the playground page.
 *
 * Needs Debian's `chromium` (/usr/bin/chromium, or CHROMIUM_PATH). Without it the test is skipped
 * with a warning, except under CI=true, where it fails.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";
import { chromium, type Browser } from "playwright-core";
import { plainMembers } from "../fixtures.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));
const executablePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const available = existsSync(executablePath);
const ci = process.env.CI === "true";

if (!available && !ci) {
  console.warn(`\n*** SKIPPED: browser tests need Chromium at ${executablePath} (apt-get install -y chromium, or set CHROMIUM_PATH). Under CI=true this fails. ***\n`);
}

const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

describe.skipIf(!available && !ci)("in a browser (headless Chromium)", () => {
  let browser: Browser;
  const dir = mkdtempSync(join(tmpdir(), "np-browser-"));

  beforeAll(async () => {
    if (!available) throw new Error(`CI=true and no Chromium at ${executablePath}: install Debian's chromium package (.ci/run does)`);
    if (!existsSync(join(root, "dist/index.js")) || !existsSync(join(root, "dist/cli.js"))) execFileSync("npx", ["tsup"], { cwd: root, stdio: "ignore" });
    browser = await chromium.launch({ executablePath, headless: true, args: ARGS });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });

  it("the core entry and the client import no Node built-in", () => {
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const code = readFileSync(file, "utf8");
      expect(code, file).not.toMatch(/from\s*["']node:|require\(["']node:|import\(["']node:|from\s*["'](fs|path|crypto|os|util|net|http)["']/);
      for (const [, chunk] of code.matchAll(/from\s*["'](\.\/[^"']+)["']/g)) visit(join(root, "dist", chunk!));
    };
    visit(join(root, "dist/index.js"));
    visit(join(root, "dist/client/index.js"));
  });

  it("replays the demo's day on the built ESM bundle; every decision equals Node's", async () => {
    // One ESM file for the page: dist/index.js with immer, and the day's data (demo/traffic.ts imports only types).
    const bundled = await build({
      stdin: {
        contents: `import * as lib from ${JSON.stringify(join(root, "dist/index.js"))};
import { runDay } from ${JSON.stringify(join(root, "demo/traffic.ts"))};
globalThis.replayDay = async () => JSON.stringify((await runDay(lib)).entries.map((e) => e.decision));
globalThis.hasNodeProcess = typeof process !== "undefined";`,
        resolveDir: root,
        loader: "ts",
      },
      bundle: true,
      format: "esm",
      platform: "browser",
      target: "es2022",
      write: false,
      logLevel: "silent",
    });
    const code = bundled.outputFiles[0]!.text;

    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.setContent("<!doctype html><title>day</title>");
    await page.addScriptTag({ content: code, type: "module" });
    await page.waitForFunction(() => typeof (globalThis as { replayDay?: unknown }).replayDay === "function");
    expect(await page.evaluate(() => (globalThis as unknown as { hasNodeProcess: boolean }).hasNodeProcess)).toBe(false);
    const inBrowser = JSON.parse(await page.evaluate(() => (globalThis as unknown as { replayDay: () => Promise<string> }).replayDay()));

    const lib = await import(pathToFileURL(join(root, "dist/index.js")).href);
    const { runDay } = await import("../../demo/traffic.js");
    const inNode = JSON.parse(JSON.stringify((await runDay(lib)).entries.map((e) => e.decision)));

    expect(inBrowser).toHaveLength(27);
    // a cap charge's name carries its store's random tag (`m<tag>.<n>`): the same n in both runs
    expect(JSON.stringify(inBrowser)).toMatch(/"member":"m[0-9a-z]+\.\d+"/);
    expect(plainMembers(inBrowser)).toEqual(plainMembers(inNode));
    // the day shows every kind of answer: allowed, 400, 403, 404, 409 and both 429s
    expect(new Set(inBrowser.map((d: { status: number }) => d.status))).toEqual(new Set([200, 400, 403, 404, 409, 429]));
    expect(errors).toEqual([]);
    await page.close();
  });

  it("opens the CLI's --html report and reads its summary from the page", async () => {
    const report = join(dir, "report.html");
    const json = execFileSync(process.execPath, [join(root, "dist/cli.js"), "replay", "examples/trace.jsonl", "--config", "examples/config.json", "--compare", "examples/halve-audience.mjs", "--html", report, "--json"], { cwd: root, encoding: "utf8" });
    const out = JSON.parse(json);
    const page = await browser.newPage();
    const requests: string[] = [];
    page.on("request", (r) => requests.push(r.url()));
    await page.goto(pathToFileURL(report).href);
    // the page's DOM, read in the page (this file is compiled without the DOM types)
    const read = (id: string): Promise<Record<string, string> & { rows: string[][] }> =>
      page.$eval(`#${id}`, (table) => ({
        ...Object.fromEntries(["requests", "allowed", "throttled", "capped", "refused"].map((name) => [name, table.getAttribute(`data-${name}`) ?? ""])),
        rows: [...table.querySelectorAll("tbody tr")].map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")),
      })) as Promise<Record<string, string> & { rows: string[][] }>;
    const summary = await read("summary");
    const compared = await read("summary-compare");
    const total = (record: Record<string, number>) => String(Object.values(record).reduce((a, b) => a + b, 0));
    for (const [table, totals] of [
      [summary, out.totals],
      [compared, out.compare.totals],
    ] as const) {
      expect(table).toMatchObject({ requests: String(totals.requests), allowed: String(totals.allowed), throttled: total(totals.throttled), capped: total(totals.capped), refused: total(totals.refused) });
    }
    expect(summary.rows.map((r) => [r[0], r[1], r[3]])).toEqual(out.summary.map((r: { credential: string; newsletter: string; allowed: number }) => [r.credential, r.newsletter, String(r.allowed)]));
    expect(await page.$eval("#changed", (p) => p.getAttribute("data-count"))).toBe(String(out.compare.changed.length));
    // the timeline is drawn: bars with a size, refusals among them
    const bars = await page.$$eval("#timeline-compare svg rect", (rects) => rects.map((r) => ({ cls: r.getAttribute("class"), width: r.getBoundingClientRect().width })));
    expect(bars.some((b) => b.cls === "refused" && b.width > 0)).toBe(true);
    // self-contained: the page fetched nothing but itself
    expect(requests).toEqual([pathToFileURL(report).href]);
    await page.close();
  });

  it("the playground page: set grants, role and request; the rendered decision is evaluate's", async () => {
    // the page and its bundle, built as `npm run build:playground` builds them, into a scratch folder
    copyFileSync(join(root, "docs/playground/index.html"), join(dir, "index.html"));
    execFileSync(process.execPath, [join(root, "scripts/build-playground.mjs"), join(dir, "playground.js")], { cwd: root, stdio: "ignore" });
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(pathToFileURL(join(dir, "index.html")).href);
    const shown = async () => ({
      status: await page.$eval("#decision", (d) => d.getAttribute("data-status")),
      decision: await page.textContent("#decision"),
      reason: await page.textContent("#reason"),
      headers: await page.textContent("#headers"),
      body: await page.textContent("#body-out"),
    });

    // spec §7 #1: content and insights read, no audience: subscribers are refused
    await page.selectOption("#grant-audience", "none");
    await page.fill("#path", "/newsletters/nl_1/subscribers?limit=100");
    let out = await shown();
    expect(out.decision).toBe("403 insufficient_scope — subscribers.list");
    expect(out.reason).toContain("spec §7 row #1): needs audience: read");
    const { evaluate, emptyUsage } = await import(pathToFileURL(join(root, "dist/index.js")).href);
    const credential = { id: "playground_key", kind: "api_key", account: false, newsletters: { nl_1: { content: "read", insights: "read" } } };
    const expected = evaluate({ method: "GET", path: "/newsletters/nl_1/subscribers?limit=100", newsletter: "nl_1" }, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: Date.UTC(2026, 10, 23, 10) }).decision;
    expect(JSON.parse(out.body!)).toEqual(expected.body);
    expect(out.headers).toBe(Object.entries(expected.headers).map(([n, v]) => `${n}: ${v}`).join("\n"));
    expect(await page.$eval('#permitted tr[data-operation="subscribers.list"] td:last-child', (td) => td.textContent)).toBe("403 insufficient_scope (needs audience: read)");

    // granting audience: read allows it; the 61st request in a minute is throttled by audience (spec §8)
    await page.selectOption("#grant-audience", "read");
    expect((await shown()).decision).toBe("200 allowed — subscribers.list");
    await page.fill("#times", "61");
    out = await shown();
    expect(out.status).toBe("429");
    expect(out.headers).toMatch(/Retry-After: \d+/);
    expect(out.reason).toContain("the audience budget (60 requests per 60 s) is spent");

    // spec §5.6: an editor's settings are capped at read (a host operation from the config box)
    await page.fill("#times", "1");
    await page.fill("#config", JSON.stringify({ operations: [{ id: "settings.update", method: "PATCH", path: "/newsletters/{newsletter}/settings", needs: "settings: write" }] }));
    await page.selectOption("#grant-settings", "write");
    await page.selectOption("#role", "editor");
    await page.selectOption("#method", "PATCH");
    await page.fill("#path", "/newsletters/nl_1/settings");
    out = await shown();
    expect(out.decision).toBe("403 insufficient_scope — settings.update");
    expect(out.reason).toContain("row #2");

    // a config mistake is shown, not thrown
    await page.fill("#config", '{"budgets":{"audience":{"limit":0}}}');
    expect(await page.textContent("#error")).toContain("budgets.audience.limit");
    expect(errors).toEqual([]);
    await page.close();
  });
});
