/**
 * The CLI as users run it: a subprocess (node with tsx's loader on src/cli/index.ts), real files,
 * real stdout/stderr and exit codes. The answers are checked against the library called in-process.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { permissionTable } from "../../src/cli/permission-table.js";
import { compare } from "../../src/cli/compare.js";
import { replay } from "../../src/cli/replay.js";
import { parseTrace } from "../../src/cli/trace-file.js";
import { defineConfig, emptyUsage, evaluate } from "../../src/index.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "np-cli-"));

function cli(args: string[], options: { tty?: boolean } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const argv = [process.execPath, "--import", "tsx", "src/cli/index.ts", ...args];
  // a pseudo-terminal (util-linux `script`) for the progress bar; a pipe otherwise
  const [file, list] = options.tty ? ["script", ["-qec", argv.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" "), "/dev/null"]] : [argv[0]!, argv.slice(1)];
  return new Promise((resolve) => {
    execFile(file, list, { cwd: root, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const exampleConfig = JSON.parse(readFileSync(join(root, "examples/config.json"), "utf8"));
const traceLines = () => parseTrace(readFileSync(join(root, "examples/trace.jsonl"), "utf8").split("\n"));

describe("npx newsletter-policy explain", () => {
  it("answers 'why did this key get 403 on that endpoint?': decision, headers and the reason in words (spec §7 #1)", async () => {
    const { code, stdout } = await cli(["explain", "--grants", "content:read insights:read", "--role", "owner", "GET", "/newsletters/nl_1/subscribers?limit=100"]);
    expect(code).toBe(0);
    expect(stdout).toContain("Decision: refused 403 insufficient_scope (operation subscribers.list)");
    expect(stdout).toContain("spec §7 row #1): needs audience: read; the credential holds content: read, insights: read there");
    expect(stdout).toContain('  RateLimit-Policy: "general";q=600;w=60, "audience";q=60;w=60');
    expect(stdout).toContain('"allowed_values": [\n        "audience: read"');
  });

  it("--json gives the decision evaluate gives; a role cap (spec §7 #2) from a .json config's extra operation", async () => {
    const configFile = join(dir, "settings.json");
    writeFileSync(configFile, JSON.stringify({ operations: [{ id: "settings.update", method: "PATCH", path: "/newsletters/{newsletter}/settings", needs: "settings: write" }] }));
    const { code, stdout } = await cli(["explain", "--config", configFile, "--grants", "settings:write", "--role", "editor", "--json", "PATCH", "/newsletters/nl_1/settings"]);
    expect(code).toBe(0);
    const out = JSON.parse(stdout);
    const { decision } = evaluate(out.request, { credential: out.credential, roles: out.roles, usage: emptyUsage(), now: Date.UTC(2026, 0, 1, 12), config: JSON.parse(readFileSync(configFile, "utf8")) });
    expect(out.decision).toEqual(JSON.parse(JSON.stringify(decision)));
    expect(out.decision.reason).toMatchObject({ rule: "insufficient_scope", case: 2, needed: "settings: write" });
    expect(out.reason).toContain("owner's current role caps it");
  });

  it("a send on a path without {newsletter} takes --newsletter, a body and an Idempotency-Key", async () => {
    const { stdout } = await cli(["explain", "--grants", "sending:write", "--newsletter", "nl_1", "--body", '{"to":["a@example.com"]}', "--idempotency-key", "k1", "POST", "/articles/a_1/test-send"]);
    expect(stdout).toContain("Decision: allowed 200 (operation articles.testSend), view full");
    expect(stdout).toContain("It counts toward the testSend daily cap.");
  });
});

describe("npx newsletter-policy permissions", () => {
  it("prints docs/permissions.md for the default config (one generator for both)", async () => {
    const { code, stdout } = await cli(["permissions"]);
    expect(code).toBe(0);
    // the page's table rows, with the links a terminal can follow (a new-user review: a generated page's header and relative links)
    const rows = (text: string) => text.split("\n").filter((line) => line.startsWith("| `"));
    const page = readFileSync(join(root, "docs/permissions.md"), "utf8");
    expect(rows(stdout)).toEqual(rows(page.replaceAll("[decision 9](decisions.md)", "decision 9 (node_modules/newsletter-policy/docs/decisions.md)")));
    expect(stdout.trimEnd()).toBe(permissionTable().trimEnd());
    expect(stdout).toContain("Every operation the default catalogue knows");
  });

  it("--json gives the table as data, as docs/cli.md says every command takes (it was refused as an unknown option; found by a black-box review)", async () => {
    const { code, stdout, stderr } = await cli(["permissions", "--json"]);
    expect(code).toBe(0);
    const data = JSON.parse(stdout) as { operations: { id: string; needs: string | null; budgets: string[]; cap: string | null }[]; budgets: unknown[]; roles: Record<string, unknown> };
    expect(data.operations.find((op) => op.id === "subscribers.list")).toMatchObject({ needs: "audience: read", budgets: ["general", "audience"], cap: null });
    expect(data.operations.find((op) => op.id === "articles.send")).toMatchObject({ needs: "sending: write", budgets: ["general", "write"], cap: "dispatch" });
    expect(data.roles.editor).toMatchObject({ settings: "read" });
    // no --config: the spec's defaults, without the docsUrl advice meant for a host's code
    expect(stderr).toBe("");
  });

  it("prints the table of a .mjs config's options", async () => {
    const { stdout } = await cli(["permissions", "--config", "examples/halve-audience.mjs"]);
    const mod = await import(join(root, "examples/halve-audience.mjs"));
    expect(stdout.trimEnd()).toBe(permissionTable(defineConfig(mod.default), { configFile: "examples/halve-audience.mjs" }).trimEnd());
    expect(stdout).toContain("| `audience` | 30 | 60 s |");
    // the host's config, not the repository's generated page (found by a new-user review)
    expect(stdout).toContain("Every operation the config in examples/halve-audience.mjs knows");
    expect(stdout).not.toContain("do not edit by hand");
    expect(stdout).not.toContain("](decisions.md)");
    expect(stdout).toContain("decision 11 (node_modules/newsletter-policy/docs/decisions.md)");
  });
});

describe("npx newsletter-policy replay", () => {
  it("summarises a trace per credential and newsletter as replay() does in-process; no progress bar into a pipe", async () => {
    const { code, stdout, stderr } = await cli(["replay", "examples/trace.jsonl", "--config", "examples/config.json", "--json"]);
    expect(code).toBe(0);
    expect(stderr).toBe("");
    const out = JSON.parse(stdout);
    const expected = replay(traceLines(), defineConfig(exampleConfig));
    expect(out.summary).toEqual(expected.summary);
    expect(out.totals).toEqual(expected.totals);
    expect(out.totals.requests).toBe(2799);
    expect(out.summary[0]).toMatchObject({ credential: "key_acme_sync", newsletter: "nl_acme", throttled: { audience: 20 }, capped: { dispatch: 4 } });
  });

  it("'what happens to our top customers if we halve the audience budget?' is one --compare", async () => {
    const { code, stdout } = await cli(["replay", "examples/trace.jsonl", "--config", "examples/config.json", "--compare", "examples/halve-audience.mjs"]);
    expect(code).toBe(0);
    const halved = defineConfig({ ...exampleConfig, budgets: { ...exampleConfig.budgets, audience: { limit: 30, window: 60 } } });
    const comparison = compare(replay(traceLines(), defineConfig(exampleConfig)), replay(traceLines(), halved));
    const acme = comparison.rows.find((r) => r.credential === "key_acme_sync")!;
    expect(stdout).toContain(`${acme.before.allowed} → ${acme.after.allowed} (${acme.after.allowed - acme.before.allowed})`);
    expect(stdout).toContain(`${comparison.changed.length} requests decided differently.`);
    // halving a budget only ever turns allowed requests into audience throttles
    expect(comparison.changed.every((c) => c.before.outcome.kind === "allowed" && c.after.outcome.kind === "throttled")).toBe(true);
  });

  it("--html writes a self-contained page: inline SVG timeline, no external assets", async () => {
    const report = join(dir, "report.html");
    const { code } = await cli(["replay", "examples/trace.jsonl", "--config", "examples/config.json", "--compare", "examples/halve-audience.mjs", "--html", report]);
    expect(code).toBe(0);
    const html = readFileSync(report, "utf8");
    expect(html).toMatch(/<figure id="timeline"><svg /);
    expect(html).not.toMatch(/<(script|link|img|iframe)\b|url\(|@import|\bsrc=/i);
    expect(html).toContain('<table id="summary" data-requests="2799"');
  });

  // util-linux `script` gives the subprocess a pseudo-terminal
  it.skipIf(!existsSync("/usr/bin/script"))("draws a progress bar on a terminal", async () => {
    const { code, stdout } = await cli(["replay", "examples/trace.jsonl", "--config", "examples/config.json"], { tty: true });
    expect(code).toBe(0);
    // cli-progress: to column 1, the bar, clear to the end of the line; the line is cleared when done
    expect(stdout).toMatch(/\x1b\[1Greplay \[#+\.*\] +\d+% \d+\/2799\x1b\[0K/);
    expect(stdout).toContain("\x1b[2K");
  });

  it("host mistakes exit 2 naming the field or line: a bad config field, a bad trace line, an unknown command", async () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ budgets: { audience: { limit: 0 } } }));
    const config = await cli(["permissions", "--config", bad]);
    expect(config.code).toBe(2);
    // the file and its option named (found by a new-user review: the field alone, and a --compare file's mistake read as --config's)
    expect(config.stderr).toContain(`--config ${bad}: budgets.audience.limit`);
    const compared = await cli(["replay", "examples/trace.jsonl", "--compare", bad]);
    expect(compared.code).toBe(2);
    expect(compared.stderr).toContain(`--compare ${bad}: budgets.audience.limit`);
    const ext = await cli(["replay", "examples/trace.jsonl", "--compare", "examples/trace.jsonl"]);
    expect(ext.code).toBe(2);
    expect(ext.stderr).toContain("--compare examples/trace.jsonl: a config file is");
    // a role the config does not know is a typo on the command line, not a 404 to explain (new-user review)
    const role = await cli(["explain", "--grants", "content:read", "--role", "ownr", "GET", "/newsletters/nl_1/articles"]);
    expect(role.code).toBe(2);
    expect(role.stderr).toContain('--role: "ownr" is not a role the config knows (owner, admin, editor); did you mean "owner"?');
    const trace = join(dir, "bad.jsonl");
    writeFileSync(trace, '{"time":"2026-11-23T08:00:00Z","credential":"nobody","request":{"method":"GET","path":"/me"}}\n');
    const line = await cli(["replay", trace]);
    expect(line.code).toBe(2);
    expect(line.stderr).toContain('trace line 1: credential "nobody" is not defined');
    const unknown = await cli(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "frobnicate"');
    const grants = await cli(["explain", "--grants", "audience:admin", "GET", "/newsletters/nl_1/subscribers"]);
    expect(grants.code).toBe(2);
    expect(grants.stderr).toContain('"audience:admin" is not <family>:<level>');
    // found by a black-box review: an unwritable --html path ended in a stack trace (exit 1)
    const html = await cli(["replay", "examples/trace.jsonl", "--html", join(dir, "no", "such", "dir", "r.html")]);
    expect(html.code).toBe(2);
    expect(html.stderr).toContain("--html: cannot write");
    expect(html.stderr).not.toMatch(/\n\s+at /);
    const relative = await cli(["explain", "--grants", "content:read", "GET", "newsletters/nl_1/articles"]);
    expect(relative.code).toBe(2);
    expect(relative.stderr).toContain('PATH must start with "/"');
    // found by a tools review: options whose getter throws ended in a stack trace (exit 1)
    const getter = join(dir, "getter.mjs");
    writeFileSync(getter, 'export default { get budgets() { throw new Error("getter boom"); } };\n');
    const read = await cli(["permissions", "--config", getter]);
    expect(read.code).toBe(2);
    expect(read.stderr).toContain("getter boom");
    expect(read.stderr).not.toMatch(/\n\s+at /);
  });

  it("DESIGN Operating: a trace line may carry the plan's limits (on the line, or on the credential's definition), and a field a line may not have exits 2 naming it (limits were dropped without a word; found by an operating review)", async () => {
    const define = (limits?: object) => JSON.stringify({ credential: { id: "k_plan", kind: "api_key", newsletters: { nl_1: { audience: "read" } } }, roles: { nl_1: "owner" }, ...(limits && { limits }) });
    const read = (i: number, extra: object = {}) => JSON.stringify({ time: Date.UTC(2026, 10, 23, 8, 0, 0, i), credential: "k_plan", request: { method: "GET", path: "/newsletters/nl_1/subscribers" }, ...extra });
    const paid = { budgets: { audience: { limit: 240 } } };
    const allowedOf = async (lines: string[]) => {
      const trace = join(dir, `plan-${lines.length}-${lines[0]!.length}-${lines[1]!.length}.jsonl`);
      writeFileSync(trace, lines.join("\n"));
      const out = await cli(["replay", trace, "--json"]);
      expect(out.code, out.stderr).toBe(0);
      return (JSON.parse(out.stdout) as { totals: { allowed: number } }).totals.allowed;
    };
    const reads = (extra?: object) => Array.from({ length: 100 }, (_, i) => read(i, extra));
    expect(await allowedOf([define(), ...reads()])).toBe(60); // the config's 60
    expect(await allowedOf([define(paid), ...reads()])).toBe(100); // the plan of the definition
    expect(await allowedOf([define(), ...reads({ limits: paid })])).toBe(100); // the plan on each line
    const typo = join(dir, "typo.jsonl");
    writeFileSync(typo, [define(), read(0, { limts: paid })].join("\n"));
    const misspelt = await cli(["replay", typo]);
    expect(misspelt.code).toBe(2);
    expect(misspelt.stderr).toContain('trace line 2: "limts" is not a field of a trace line; did you mean limits?');
    const bad = join(dir, "bad-limits.jsonl");
    writeFileSync(bad, [define(), read(0, { limits: { budgets: { audience: { limit: 0 } } } })].join("\n"));
    const zero = await cli(["replay", bad]);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain("trace line 2: limits.budgets.audience.limit");
  });

  it("explain takes --grants or --credential, not both (--grants was dropped without a word; found by an operating review)", async () => {
    const both = await cli(["explain", "--grants", "audience:read", "--credential", '{"id":"k","kind":"api_key","newsletters":{}}', "GET", "/newsletters/nl_1/subscribers"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--grants or --credential, not both");
  });

  it("a trace saved with a byte-order mark (Windows) replays as without one (it was 'trace line 1: not JSON'; found by a tools review)", async () => {
    const trace = join(dir, "bom.jsonl");
    writeFileSync(trace, "\uFEFF" + readFileSync("examples/trace.jsonl", "utf8"));
    const withMark = await cli(["replay", trace, "--json"]);
    const without = await cli(["replay", "examples/trace.jsonl", "--json"]);
    expect(withMark.code).toBe(0);
    const { trace: _a, ...marked } = JSON.parse(withMark.stdout) as { trace: string };
    const { trace: _b, ...plain } = JSON.parse(without.stdout) as { trace: string };
    expect(marked).toEqual(plain);
  });

  it("a host mistake the library finds in a trace line (a role that is not a name, a time past a Date's range) names the line; the message carries the library's name once (found by a black-box review)", async () => {
    const trace = join(dir, "bad-role.jsonl");
    writeFileSync(
      trace,
      [
        '{"credential":{"id":"k1","kind":"api_key","newsletters":{"nl_1":{"content":"read"}}},"roles":{"nl_1":"owner"}}',
        '{"time":"2026-11-23T08:00:00Z","credential":"k1","request":{"method":"GET","path":"/newsletters/nl_1/articles"}}',
        '{"time":"2026-11-23T08:00:01Z","credential":"k1","roles":{"nl_1":5},"request":{"method":"GET","path":"/newsletters/nl_1/articles"}}',
      ].join("\n"),
    );
    const role = await cli(["replay", trace]);
    expect(role.code).toBe(2);
    expect(role.stderr).toContain("newsletter-policy: trace line 3: roles.nl_1 must be a role's name");
    expect(role.stderr).not.toContain("newsletter-policy: newsletter-policy:");
    const far = join(dir, "bad-time.jsonl");
    writeFileSync(far, '{"time":1e30,"credential":{"id":"k1","kind":"api_key","newsletters":{}},"roles":{},"request":{"method":"GET","path":"/me"}}\n');
    const time = await cli(["replay", far]);
    expect(time.code).toBe(2);
    expect(time.stderr).toContain("trace line 1: now must be a time a Date can hold");
  });

  it("account operations (GET /me, GET /rate-limit) are explained without a newsletter (docs/cli.md: --grants account:read for GET /me; found by a black-box review)", async () => {
    const me = await cli(["explain", "--grants", "account:read", "GET", "/me"]);
    expect(me.code).toBe(0);
    expect(me.stdout).toContain("Decision: allowed 200 (operation me.get)");
    const limits = await cli(["explain", "--grants", "content:read", "GET", "/rate-limit"]);
    expect(limits.code).toBe(0);
    expect(limits.stdout).toContain("Decision: allowed 200");
    // a path whose newsletter the policy must be told: answered 404 unresolved, with the hint
    const send = await cli(["explain", "--grants", "sending:write", "POST", "/articles/a_1/send"]);
    expect(send.code).toBe(0);
    expect(send.stdout).toContain("Decision: refused 404 not_found");
    expect(send.stdout).toContain("give --newsletter ID");
  });
});

describe("npx newsletter-policy --help and --version", () => {
  it("help after a command (explain --help, replay -h) prints the usage and exits 0: it was 'Unknown option' and exit 2 (found by a new-user review); --version prints the package's", async () => {
    for (const args of [["explain", "--help"], ["permissions", "-h"], ["replay", "--help"], ["--help"]]) {
      const { code, stdout } = await cli(args);
      expect(code, args.join(" ")).toBe(0);
      expect(stdout).toContain("Usage: newsletter-policy <command>");
    }
    const unknown = await cli(["bogus", "--help"]);
    expect(unknown.code, "an unknown command with --help is still unknown (found by a review)").toBe(2);
    expect(unknown.stderr).toContain('unknown command "bogus"');
    const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
    for (const flag of ["--version", "-v"]) {
      const { code, stdout } = await cli([flag]);
      expect(code).toBe(0);
      expect(stdout.trim()).toBe(version);
    }
  });
});

describe("docs/cli.md stays true", () => {
  it("every `$ npx newsletter-policy …` block shows what the command prints (a block ending in … shows its start)", async () => {
    const doc = readFileSync(join(root, "docs/cli.md"), "utf8");
    const blocks = [...doc.matchAll(/```console\n\$ npx newsletter-policy (.+)\n([\s\S]*?)```/g)];
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    for (const [, command, shown] of blocks) {
      const args = [...command!.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!).map((a) => (a === "report.html" ? join(dir, "report.html") : a));
      const { code, stdout } = await cli(args);
      expect(code, command).toBe(0);
      const expected = shown!.replace(/\n$/, "");
      const actual = stdout.replace(/\n$/, "").replace(join(dir, "report.html"), "report.html");
      if (expected.endsWith("\n…")) expect(actual.startsWith(expected.slice(0, -2)), command).toBe(true);
      else expect(actual, command).toBe(expected);
    }
  });
});

