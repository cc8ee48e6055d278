/**
 * A scripted day of traffic through one policy: each line is a request, the table shows what the
 * policy answered. Run with `npm run demo`. The day itself is in demo/traffic.ts.
 */
import * as lib from "../src/index.js";
import { runDay } from "./traffic.js";

const { entries, policy, ownerKey } = await runDay(lib);

const rows: string[][] = [["time", "who", "request", "status", "code", "param / allowed_values", "Policy", "Limit", "Remaining", "Reset", "Retry-After", "note"]];
// RateLimit-Policy is long: the table names its budgets, and each distinct header is printed whole below
const policies = new Map<string, string>();
const budgetsOf = (header: string) => [...header.matchAll(/"([^"]+)"/g)].map((m) => m[1]).join("+");
for (const { at, credential, request, note, decision: d } of entries) {
  const e = d.body?.error;
  const detail = e ? [e.param, e.allowed_values?.join("|")].filter(Boolean).join(" ") : d.view === "reader" ? "(reader view)" : "";
  const h = d.headers;
  const policyHeader = h["RateLimit-Policy"] ?? "";
  policies.set(budgetsOf(policyHeader), policyHeader);
  rows.push([at, credential.id, `${request.method} ${request.path}`.slice(0, 58), String(d.status), e?.code ?? "-", detail, budgetsOf(policyHeader), h["RateLimit-Limit"] ?? "", h["RateLimit-Remaining"] ?? "", h["RateLimit-Reset"] ?? "", h["Retry-After"] ?? "", note ?? ""]);
}

const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join("  ");
console.log(line(rows[0]!));
console.log(widths.map((w) => "-".repeat(w)).join("  "));
for (const r of rows.slice(1)) console.log(line(r));
console.log("\nRateLimit-Policy headers sent:");
for (const [budgets, header] of policies) console.log(`  ${budgets.padEnd(22)} RateLimit-Policy: ${header}`);
console.log(`\nGET /rate-limit for ${ownerKey.id} at 12:00:08:`, JSON.stringify(await policy.status(ownerKey)));
