#!/usr/bin/env node
/**
 * `npx newsletter-policy explain | permissions | replay`: what the policy answers one request, the
 * permission table of a config, and what a day of traffic would meet under one config or two.
 * Arguments are read with node:util's parseArgs; see docs/cli.md.
 */
import { readFile, writeFile } from "node:fs/promises";
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { evaluate } from "../evaluate.js";
import { emptyUsage } from "../snapshot.js";
import { credentialFromScopes } from "../oauth.js";
import { PolicyConfigError } from "../errors.js";
import { FAMILIES } from "../permissions.js";
import { meantName } from "../host-input.js";
import type { Credential, Decision, PolicyRequest } from "../types.js";
import { CliError } from "./cli-error.js";
import { loadConfig } from "./config-file.js";
import { permissionData, permissionTable } from "./permission-table.js";
import { progressLine } from "./progress.js";
import { compare } from "./compare.js";
import { replay } from "./replay.js";
import { comparisonText, reportHtml, summaryText } from "./report.js";
import { parseTrace, type TraceLine } from "./trace-file.js";
import { reasonInWords } from "./words.js";

const USAGE = `Usage: newsletter-policy <command> [options]

Commands:
  explain METHOD PATH        decide one request for one credential and role: decision, headers, reason
      --grants "content:read audience:read"   the credential's grants on the newsletter (OAuth scope form;
                                              account:read for GET /me); or --credential FILE|JSON
      --newsletter ID        the newsletter (default: read from /newsletters/ID/… paths)
      --role ROLE            the owner's current role there (default owner)
      --kind api_key|oauth   (default api_key)   --body JSON   --idempotency-key KEY
  permissions                the permission table (Markdown) for --config (default: the spec's)
  replay TRACE.jsonl         run a trace (JSON lines: time, credential, roles, request) through --config
      --compare OTHER        also run it through another config and show the difference
      --html REPORT.html     write a self-contained report with a timeline of budgets and caps

Options for every command:
  --config FILE              .json with the options of defineConfig, or .js/.mjs/.cjs exporting them
                             (default export or "config"); default: the spec's numbers
  --json                     machine-readable output
  -h, --help                 this text (also after a command: explain --help)
  -v, --version              the package's version
`;

const COMMANDS = new Set(["explain", "permissions", "replay"]);

/** The package's version, from its package.json (beside dist/ when installed; two folders up from src/cli/ in the repository). */
async function version(): Promise<string> {
  for (const relative of ["../package.json", "../../package.json"]) {
    const text = await readFile(new URL(relative, import.meta.url), "utf8").catch(() => undefined);
    const pkg = text === undefined ? undefined : (JSON.parse(text) as { name?: string; version?: string });
    if (pkg?.name === "newsletter-policy" && pkg.version !== undefined) return pkg.version;
  }
  return "unknown";
}


interface Io {
  out: (text: string) => void;
  err: NodeJS.WriteStream;
}

function parseGrants(text: string): string[] {
  const scopes = text.split(/[\s,]+/).filter(Boolean);
  for (const scope of scopes) {
    const [family, level] = scope.split(":");
    const ok = scope === "account:read" || ((FAMILIES as readonly string[]).includes(family ?? "") && (level === "read" || level === "write" || level === "none"));
    if (!ok) throw new CliError(`--grants: "${scope}" is not <family>:<level> (families: ${FAMILIES.join(", ")}; levels: read, write) or account:read`);
  }
  return scopes.filter((s) => !s.endsWith(":none"));
}

async function jsonArgument(value: string, name: string): Promise<unknown> {
  const text = value.trimStart().startsWith("{") || value.trimStart().startsWith("[") ? value : await readFile(value, "utf8").catch(() => {
    throw new CliError(`${name}: "${value}" is neither JSON nor a readable file`);
  });
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CliError(`${name}: not JSON (${(error as Error).message})`);
  }
}

/** What `explain` prints for one decision. */
function explainText(e: { method: string; path: string; newsletter: string | undefined; role: string; hinted: boolean; credential: Credential; decision: Decision; words: string }): string {
  const { method, path, newsletter, role, hinted, credential, decision, words } = e;
  const grants = Object.entries((newsletter === undefined ? undefined : credential.newsletters?.[newsletter]) ?? {})
    .map(([f, l]) => `${f}: ${l}`)
    .join(", ");
  const unresolved = decision.reason.rule === "no_reach" && decision.reason.cause === "unresolved";
  return [
    `${method.toUpperCase()} ${path}`,
    newsletter === undefined
      ? `  credential ${credential.id} (${credential.kind}), on no newsletter${credential.account ? ", granted account: read" : ""}`
      : `  credential ${credential.id} (${credential.kind}) on ${newsletter} as ${role}, granted ${grants || "nothing"}${credential.account ? " + account: read" : ""}`,
    "",
    `Decision: ${decision.allowed ? "allowed" : "refused"} ${decision.status}${decision.body ? ` ${decision.body.error.code}` : ""}${decision.operation ? ` (operation ${decision.operation})` : ""}${decision.view ? `, view ${decision.view}` : ""}`,
    `Reason:   ${words}`,
    "Headers:",
    ...Object.entries(decision.headers).map(([name, value]) => `  ${name}: ${value}`),
    ...(decision.body ? ["Body:", JSON.stringify(decision.body, null, 2).replace(/^/gm, "  ")] : []),
    ...(unresolved && !hinted ? ["", "Hint: the path names no newsletter; give --newsletter ID (the newsletter that owns the resource)."] : []),
  ].join("\n");
}

async function explain(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      config: { type: "string" },
      grants: { type: "string" },
      credential: { type: "string" },
      newsletter: { type: "string" },
      role: { type: "string", default: "owner" },
      kind: { type: "string", default: "api_key" },
      body: { type: "string" },
      "idempotency-key": { type: "string" },
      json: { type: "boolean", default: false },
    },
  });
  if (positionals.length !== 2) throw new CliError("explain needs METHOD and PATH, e.g. explain GET /newsletters/nl_1/subscribers");
  const [method, path] = positionals as [string, string];
  const config = await loadConfig(values.config);
  if (!path.startsWith("/")) throw new CliError(`PATH must start with "/": ${path.slice(0, 80)}`);
  // an account operation (GET /me, GET /rate-limit) needs none; for /articles/… and the like the
  // policy answers 404 unresolved, and the output says to give --newsletter
  const newsletter = values.newsletter ?? /^\/newsletters\/([^/?#]+)/.exec(path)?.[1];
  if (values.kind !== "api_key" && values.kind !== "oauth") throw new CliError(`--kind must be api_key or oauth`);
  // a role the config does not know reaches nothing (404 unknown_role): on the command line it is a typo to name
  const role = values.role!;
  const knownRoles = Object.keys(config.roles);
  if (!knownRoles.includes(role)) {
    const meant = meantName(role, knownRoles);
    throw new CliError(`--role: "${role.slice(0, 64)}" is not a role the config knows (${knownRoles.join(", ")})${meant === undefined ? "" : `; did you mean "${meant}"?`}`);
  }
  let credential: Credential;
  if (values.credential !== undefined) {
    // one credential: the grants of the one would be dropped without a word (found by an operating review)
    if (values.grants !== undefined) throw new CliError("explain takes --grants or --credential, not both (--credential holds the grants)");
    credential = (await jsonArgument(values.credential, "--credential")) as Credential;
  } else {
    if (values.grants === undefined) throw new CliError("explain needs --grants (or --credential)");
    credential = { ...credentialFromScopes({ id: "cli_key", scope: parseGrants(values.grants), newsletters: newsletter === undefined ? [] : [newsletter] }), kind: values.kind };
  }
  const request: PolicyRequest = newsletter === undefined ? { method, path } : { method, path, newsletter };
  if (values.body !== undefined) request.body = await jsonArgument(values.body, "--body");
  if (values["idempotency-key"] !== undefined) request.idempotencyKey = values["idempotency-key"];
  const roles: Record<string, string> = newsletter === undefined ? {} : { [newsletter]: role };
  const { decision } = evaluate(request, { credential, roles, usage: emptyUsage(), now: Date.UTC(2026, 0, 1, 12), config });
  const words = reasonInWords(decision);
  if (values.json) {
    io.out(JSON.stringify({ request, credential, roles, decision, reason: words }, null, 2));
    return 0;
  }
  io.out(explainText({ method, path, newsletter, role, hinted: values.newsletter !== undefined, credential, decision, words }));
  return 0;
}

async function permissions(args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({ args, options: { config: { type: "string" }, json: { type: "boolean", default: false } } });
  const config = await loadConfig(values.config);
  io.out(values.json ? JSON.stringify(permissionData(config), null, 2) : permissionTable(config, { configFile: values.config }).trimEnd());
  return 0;
}

async function readTrace(path: string): Promise<TraceLine[]> {
  const text = await readFile(path, "utf8").catch((error: Error) => {
    throw new CliError(`${path}: ${error.message}`);
  });
  try {
    // a byte-order mark (a file saved on Windows) is not part of the first line
    return parseTrace((text.startsWith("\uFEFF") ? text.slice(1) : text).split("\n"));
  } catch (error) {
    throw new CliError(`${path}: ${(error as Error).message}`);
  }
}

async function replayCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { config: { type: "string" }, compare: { type: "string" }, html: { type: "string" }, json: { type: "boolean", default: false } },
  });
  if (positionals.length !== 1) throw new CliError("replay needs one trace file (JSON lines)");
  const trace = positionals[0]!;
  const lines = await readTrace(trace);
  const config = await loadConfig(values.config);
  const other = values.compare === undefined ? undefined : await loadConfig(values.compare, "--compare");
  const configName = values.config ?? "the spec's defaults";
  const progress = progressLine(other ? "replay (1/2)" : "replay", io.err);
  const result = replay(lines, config, progress.update);
  progress.done();
  let compared;
  if (other !== undefined) {
    const second = progressLine("replay (2/2)", io.err);
    const otherResult = replay(lines, other, second.update);
    second.done();
    compared = { configName: values.compare!, config: other, result: otherResult, comparison: compare(result, otherResult) };
  }
  if (values.html !== undefined) {
    const report = reportHtml({ trace, configName, config, result, ...(compared && { other: compared }) });
    await writeFile(values.html, report).catch((error: Error) => {
      throw new CliError(`--html: cannot write ${values.html}: ${error.message}`);
    });
  }
  if (values.json) {
    io.out(JSON.stringify({ trace, config: configName, summary: result.summary, totals: result.totals, ...(compared && { compare: { config: compared.configName, summary: compared.result.summary, totals: compared.result.totals, rows: compared.comparison.rows, changed: compared.comparison.changed } }) }, null, 2));
    return 0;
  }
  const out = [`${lines.length} requests from ${trace}, through ${configName}:`, "", summaryText(result)];
  if (compared !== undefined) out.push("", `Compared with ${compared.configName} (before → after):`, "", comparisonText(compared.comparison));
  if (values.html !== undefined) out.push("", `wrote ${values.html}`);
  io.out(out.join("\n"));
  return 0;
}

/**
 * Runs the CLI.
 *
 * @param argv - the arguments after the program name.
 * @param io - where output goes (default stdout; progress and errors to stderr).
 * @returns the exit code: 0 done, 2 a usage, file or config mistake.
 */
export async function main(argv: readonly string[], io: Io = { out: (t) => process.stdout.write(`${t}\n`), err: process.stderr }): Promise<number> {
  const [command, ...rest] = argv;
  try {
    // help asked for after a command (explain --help): the usage, which covers every command
    if (COMMANDS.has(command ?? "") && (rest.includes("--help") || rest.includes("-h"))) {
      io.out(USAGE.trimEnd());
      return 0;
    }
    switch (command) {
      case "explain":
        return await explain(rest, io);
      case "permissions":
        return await permissions(rest, io);
      case "replay":
        return await replayCommand(rest, io);
      case undefined:
      case "help":
      case "-h":
      case "--help":
        io.out(USAGE.trimEnd());
        return command === undefined ? 2 : 0;
      case "-v":
      case "--version":
      case "version":
        io.out(await version());
        return 0;
      default:
        throw new CliError(`unknown command "${command}"`);
    }
  } catch (error) {
    // the user's mistakes get a message; anything else is a bug and keeps its stack
    const code = (error as { code?: unknown } | null)?.code;
    const known = error instanceof CliError || error instanceof PolicyConfigError || (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS"));
    if (!known) throw error;
    // a PolicyConfigError's message starts with the library's name already: its field and problem, without it
    const message = error instanceof PolicyConfigError ? `${error.field} ${error.problem}` : (error as Error).message;
    io.err.write(`newsletter-policy: ${message}\nRun "newsletter-policy --help" for usage.\n`);
    return 2;
  }
}

// Run when executed (the bin, or tsx src/cli/index.ts), not when imported by tests.
const self = fileURLToPath(import.meta.url);
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === self) {
  process.exitCode = await main(process.argv.slice(2));
}
