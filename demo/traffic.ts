/**
 * The demo's day of traffic as a reusable module: the config, the credentials and the scripted
 * requests, and `runDay` to decide them with a given build of the library. `npm run demo` prints it
 * (demo/day.ts); the browser test runs it in Chromium on the built bundle and compares every
 * decision with Node's. Imports only types, so it bundles with whichever build it is handed.
 */
import type * as Library from "../src/index.js";
import type { Credential, Decision, PolicyOptions, PolicyRequest, Roles } from "../src/index.js";

/** The parts of the library the day needs: the built bundle or the sources. */
export type DayLibrary = Pick<typeof Library, "createPolicy" | "credentialFromScopes" | "defineConfig" | "MemoryStore">;

export const options: PolicyOptions = {
  // small numbers so that a short day shows every kind of answer
  budgets: { audience: { limit: 3, window: 60 }, write: { limit: 10, window: 60 } },
  caps: { dispatch: { limit: 2 }, testSend: { limit: 2 } },
  docsUrl: "https://docs.newsletter.example/errors",
  // the host's own operation, beside the spec's catalogue
  operations: [{ id: "settings.update", method: "PATCH", path: "/newsletters/{newsletter}/settings", needs: "settings: write" }],
};

export const ownerKey: Credential = {
  id: "key_owner",
  kind: "api_key",
  account: true,
  newsletters: { nl_daily: { content: "write", audience: "write", sending: "write", insights: "read", settings: "write" } },
};
export const editorKey: Credential = {
  id: "key_editor",
  kind: "api_key",
  newsletters: { nl_daily: { content: "write", sending: "write", settings: "write" } },
};
export const analystGrant = { id: "oauth_analytics_app", scope: "content:read insights:read", newsletters: ["nl_daily", "nl_weekly"] };

export const roles: Record<string, Roles> = {
  key_owner: { nl_daily: "owner" },
  key_editor: { nl_daily: "editor" },
  oauth_analytics_app: { nl_daily: "admin" }, // no role on nl_weekly: that newsletter is not reached
};

export type Step = [at: string, who: Credential, request: PolicyRequest, note?: string];

/** The scripted day: time of day (UTC), who, the request, and a note. */
export function steps(analyst: Credential): Step[] {
  const send = (article: string, key?: string): PolicyRequest => ({ method: "POST", path: `/articles/${article}/send`, newsletter: "nl_daily", ...(key && { idempotencyKey: key }) });
  return [
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
}

/** One decided step of the day. */
export interface DayEntry {
  readonly at: string;
  readonly credential: Credential;
  readonly request: PolicyRequest;
  readonly note: string | undefined;
  readonly decision: Decision;
}

/**
 * Decides the day with one policy over a MemoryStore, with a clock set to each step's time and
 * request ids counted from 0001, so that every run (in Node or a browser) gives the same decisions.
 *
 * @param lib - the library build to run.
 * @returns the decided steps, the policy (for `status`) and the owner's key.
 */
export async function runDay(lib: DayLibrary): Promise<{ entries: DayEntry[]; policy: ReturnType<DayLibrary["createPolicy"]>; ownerKey: Credential }> {
  const config = lib.defineConfig(options);
  const analyst = lib.credentialFromScopes(analystGrant);
  let now = 0;
  let n = 0;
  const policy = lib.createPolicy({ store: new lib.MemoryStore(), config, clock: () => now, generateId: () => String(++n).padStart(4, "0") });
  const entries: DayEntry[] = [];
  for (const [at, credential, request, note] of steps(analyst)) {
    now = Date.parse(`2026-11-23T${at}Z`);
    const decision = await policy.check(request, { credential, roles: roles[credential.id]! });
    entries.push({ at, credential, request, note, decision });
  }
  return { entries, policy, ownerKey };
}
