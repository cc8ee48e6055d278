/**
 * Writes examples/trace.jsonl: a deterministic 20 minutes (08:00–08:20 UTC) of four customers'
 * traffic, for `newsletter-policy replay`. Run with `npx tsx examples/make-trace.ts`.
 */
import { writeFileSync } from "node:fs";
import type { Credential, PolicyRequest } from "../src/index.js";

let seed = 20261123;
/** A small LCG, so the trace is the same on every run. */
function random(): number {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
}

interface Customer {
  credential: Credential;
  roles: Record<string, string>;
  newsletter: string;
  /** audience reads per minute, in bursts */
  audiencePerMinute: number;
  otherPerMinute: number;
  sendsPerHour: number;
}

const full = { content: "write", audience: "read", sending: "write", insights: "read" } as const;
const customers: Customer[] = [
  { credential: { id: "key_acme_sync", kind: "api_key", newsletters: { nl_acme: full } }, roles: { nl_acme: "owner" }, newsletter: "nl_acme", audiencePerMinute: 48, otherPerMinute: 8, sendsPerHour: 40 },
  { credential: { id: "key_globex_crm", kind: "api_key", newsletters: { nl_globex: full } }, roles: { nl_globex: "admin" }, newsletter: "nl_globex", audiencePerMinute: 36, otherPerMinute: 4, sendsPerHour: 12 },
  { credential: { id: "key_initech_reports", kind: "api_key", newsletters: { nl_initech: { content: "read", insights: "read", audience: "read" } } }, roles: { nl_initech: "editor" }, newsletter: "nl_initech", audiencePerMinute: 12, otherPerMinute: 6, sendsPerHour: 0 },
  { credential: { id: "oauth_dashboard_app", kind: "oauth", newsletters: { nl_acme: { content: "read", insights: "read" } } }, roles: { nl_acme: "editor" }, newsletter: "nl_acme", audiencePerMinute: 4, otherPerMinute: 8, sendsPerHour: 0 },
];

const start = Date.UTC(2026, 10, 23, 8, 0, 0);
const MINUTES = 20;
const lines: string[] = [];
const push = (at: number, c: Customer, request: PolicyRequest) => lines.push(JSON.stringify({ time: new Date(at).toISOString(), credential: c.credential.id, request }));

for (let minute = 0; minute < MINUTES; minute++) {
  for (const c of customers) {
    // the sync jobs read subscribers in a burst at the start of each minute (busier in the second hour)
    const reads = Math.round(c.audiencePerMinute * (minute >= MINUTES / 2 ? 1.2 : 1) * (0.8 + 0.4 * random()));
    for (let i = 0; i < reads; i++) {
      const at = start + minute * 60_000 + Math.floor(random() * 20_000);
      const which = random();
      const path = which < 0.7 ? `/newsletters/${c.newsletter}/subscribers?limit=100&cursor=${minute * 100 + i}` : which < 0.9 ? `/newsletters/${c.newsletter}/events` : `/newsletters/${c.newsletter}/insights?expand=subscriber`;
      push(at, c, { method: "GET", path });
    }
    for (let i = 0; i < c.otherPerMinute; i++) {
      const at = start + minute * 60_000 + Math.floor(random() * 60_000);
      const which = random();
      const path = which < 0.6 ? `/newsletters/${c.newsletter}/articles?status=${random() < 0.8 ? "sent" : "draft"}` : `/newsletters/${c.newsletter}/threads`;
      push(at, c, { method: "GET", path });
    }
    if (c.sendsPerHour > 0 && random() < c.sendsPerHour / 60) {
      const at = start + minute * 60_000 + Math.floor(random() * 60_000);
      const article = `art_${c.newsletter}_${minute}`;
      push(at, c, { method: "POST", path: `/articles/${article}/test-send`, newsletter: c.newsletter, body: { to: ["qa@example.com"] } });
      push(at + 30_000, c, { method: "POST", path: `/articles/${article}/send`, newsletter: c.newsletter, idempotencyKey: `send-${article}` });
    }
  }
}
lines.sort((a, b) => JSON.parse(a).time.localeCompare(JSON.parse(b).time));
// each credential is defined once, on a line of its own; request lines name it by id
const definitions = customers.map((c) => JSON.stringify({ credential: c.credential, roles: c.roles }));
writeFileSync(new URL("./trace.jsonl", import.meta.url), [...definitions, ...lines].join("\n") + "\n");
console.log(`wrote examples/trace.jsonl: ${lines.length} requests`);
