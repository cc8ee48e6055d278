/**
 * A scripted day of traffic through one policy: each line is a request, the table shows what the
 * policy answered. Run with `npm run demo`.
 */
import { createPolicy, credentialFromScopes, defineConfig, MemoryStore, type Credential, type PolicyRequest, type Roles } from "../src/index.js";

const config = defineConfig({
  // small numbers so that a short day shows every kind of answer
  budgets: { audience: { limit: 3, window: 60 }, write: { limit: 10, window: 60 } },
  caps: { dispatch: { limit: 2 }, testSend: { limit: 2 } },
  docsUrl: "https://docs.newsletter.example/errors",
  // the host's own operation, beside the spec's catalogue
  operations: [{ id: "settings.update", method: "PATCH", path: "/newsletters/{newsletter}/settings", needs: "settings: write" }],
});

const ownerKey: Credential = {
  id: "key_owner",
  kind: "api_key",
  account: true,
  newsletters: { nl_daily: { content: "write", audience: "write", sending: "write", insights: "read", settings: "write" } },
};
const editorKey: Credential = {
  id: "key_editor",
  kind: "api_key",
  newsletters: { nl_daily: { content: "write", sending: "write", settings: "write" } },
};
const analyst = credentialFromScopes({ id: "oauth_analytics_app", scope: "content:read insights:read", newsletters: ["nl_daily", "nl_weekly"] });
const roles: Record<string, Roles> = {
  key_owner: { nl_daily: "owner" },
  key_editor: { nl_daily: "editor" },
  oauth_analytics_app: { nl_daily: "admin" }, // no role on nl_weekly: that newsletter is not reached
};

type Step = [at: string, who: Credential, request: PolicyRequest, note?: string];
const send = (article: string, key?: string): PolicyRequest => ({ method: "POST", path: `/articles/${article}/send`, newsletter: "nl_daily", ...(key && { idempotencyKey: key }) });

const day: Step[] = [
  ["08:00:00", ownerKey, { method: "GET", path: "/me" }],
  ["08:00:01", ownerKey, { method: "GET", path: "/newsletters/nl_daily/subscribers?limit=100" }],
  ["08:00:02", ownerKey, { method: "GET", path: "/newsletters/nl_daily/subscribers?limit=100&cursor=2" }],
  ["08:00:03", ownerKey, { method: "GET", path: "/newsletters/nl_daily/events" }],
  ["08:00:04", ownerKey, { method: "GET", path: "/newsletters/nl_daily/subscribers?limit=100&cursor=3" }, "audience spent"],
  ["08:00:05", ownerKey, { method: "GET", path: "/newsletters/nl_daily/articles?status=draft" }, "other calls go on"],
  ["08:01:01", ownerKey, { method: "GET", path: "/newsletters/nl_daily/subscribers?limit=100&cursor=3" }, "window refilled"],
  ["09:00:00", editorKey, { method: "POST", path: "/newsletters/nl_daily/articles", body: { title: "Monday" } }],
  ["09:00:10", editorKey, { method: "PATCH", path: "/newsletters/nl_daily/settings" }, "editor caps settings"],
  ["09:05:00", editorKey, { method: "POST", path: "/articles/art_1/test-send", newsletter: "nl_daily", body: { to: ["me@example.com", "qa@example.com"] } }],
  ["09:06:00", editorKey, { method: "POST", path: "/articles/art_1/test-send", newsletter: "nl_daily", body: { to: Array(6).fill("x@example.com") } }, "6 addresses"],
  ["09:07:00", editorKey, { method: "POST", path: "/articles/art_1/test-send", newsletter: "nl_daily", body: { to: ["me@example.com"] } }],
  ["09:08:00", editorKey, { method: "POST", path: "/articles/art_1/test-send", newsletter: "nl_daily", body: { to: ["me@example.com"] } }, "test-send cap"],
  ["10:00:00", editorKey, send("art_1", "idem-1")],
  ["10:00:05", editorKey, send("art_1", "idem-1"), "retry: counted once"],
  ["10:00:09", editorKey, send("art_2", "idem-1"), "key reused"],
  ["11:00:00", ownerKey, { method: "POST", path: "/articles/art_2/schedule", newsletter: "nl_daily" }],
  ["11:30:00", ownerKey, send("art_3"), "dispatch cap"],
  ["12:00:00", analyst, { method: "GET", path: "/newsletters/nl_daily/insights" }],
  ["12:00:01", analyst, { method: "GET", path: "/newsletters/nl_daily/insights?expand=subscriber" }],
  ["12:00:02", analyst, { method: "GET", path: "/newsletters/nl_daily/articles?status=draft" }, "reader view"],
  ["12:00:03", analyst, { method: "GET", path: "/newsletters/nl_daily/articles?tag=launch" }],
  ["12:00:04", analyst, { method: "GET", path: "/newsletters/nl_daily/threads?visibility=private" }],
  ["12:00:05", analyst, { method: "GET", path: "/newsletters/nl_weekly/articles" }, "no role there"],
  ["12:00:06", analyst, { method: "GET", path: "/me" }],
  ["12:00:07", analyst, { method: "GET", path: "/newsletters/nl_daily/../secrets" }],
  ["12:00:08", analyst, { method: "DELETE", path: "/newsletters/nl_daily" }, "unknown: fails closed"],
];

let now = 0;
let n = 0;
const policy = createPolicy({ store: new MemoryStore(), config, clock: () => now, generateId: () => String(++n).padStart(4, "0") });

const rows: string[][] = [["time", "who", "request", "status", "code", "param / allowed_values", "Policy", "Limit", "Remaining", "Reset", "Retry-After", "note"]];
// RateLimit-Policy is long: the table names its budgets, and each distinct header is printed whole below
const policies = new Map<string, string>();
const budgetsOf = (header: string) => [...header.matchAll(/"([^"]+)"/g)].map((m) => m[1]).join("+");
for (const [at, credential, request, note] of day) {
  now = Date.parse(`2026-11-23T${at}Z`);
  const d = await policy.check(request, { credential, roles: roles[credential.id]! });
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
