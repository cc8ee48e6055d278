/**
 * newsletter-policy/client against a real server: node:http on a loopback port with the package's
 * node adapter (`newsletter-policy/node`) deciding every request, real headers and bodies over real
 * fetch. The server's clock is the test's: the client's `sleep` moves it forward instead of waiting, so a minute-long Retry-After takes no time.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { newsletterPolicy } from "../../src/adapters/node.js";
import { retryDelay, withRetry, type WithRetryOptions } from "../../src/client/index.js";
import { createPolicy, MemoryStore, type ChargeRequest, type Credential, type Policy, type PolicyOptions, type PolicyStore, type ReleaseTicket, type BudgetCharge } from "../../src/index.js";

const T0 = Date.UTC(2026, 10, 22, 10, 0, 0); // 14 hours before the daily caps reset
const credential: Credential = { id: "key_client", kind: "api_key", newsletters: { nl_1: { content: "read", audience: "read", sending: "write" } } };

/** A store whose next `failures` charges fail, as a Redis that drops the connection does. */
class FailingStore implements PolicyStore {
  failures = 0;
  constructor(private readonly inner = new MemoryStore()) {}
  charge(request: ChargeRequest) {
    if (this.failures > 0) {
      this.failures--;
      throw new Error("connection reset");
    }
    return this.inner.charge(request);
  }
  release(ticket: ReleaseTicket, now: number) {
    return this.inner.release(ticket, now);
  }
  read(budgets: readonly BudgetCharge[], now: number) {
    return this.inner.read(budgets, now);
  }
}

interface Seen {
  method: string;
  url: string;
  idempotencyKey: string | undefined;
  status: number;
}

let server: Server;
let base: string;
let now = T0;
let policy: Policy;
let store: FailingStore;
let seen: Seen[] = [];
const waits: number[] = [];

function reset(options: PolicyOptions): void {
  now = T0;
  store = new FailingStore();
  policy = createPolicy({ store, config: { docsUrl: "https://docs.example.com/errors", ...options }, clock: () => now });
  seen = [];
  waits.length = 0;
}

/** withRetry whose waits move the server's clock. */
const client = (options: WithRetryOptions = {}) =>
  withRetry(fetch, {
    random: () => 0.5,
    ...options,
    sleep: async (ms) => {
      waits.push(ms);
      now += ms;
    },
  });

beforeAll(async () => {
  // the package's own node:http adapter decides every request: headers, refusals and bodies as a host's server sends them
  // (each test makes a fresh policy: the guard is made per request over the current one)
  const guard = () => newsletterPolicy({
    policy,
    who: () => ({ credential, roles: { nl_1: "owner" } }),
    newsletter: () => "nl_1",
    onDecision: (decision, req) => {
      const key = req.headers["idempotency-key"];
      seen.push({ method: req.method!, url: req.url!, idempotencyKey: typeof key === "string" ? key : undefined, status: decision.status });
    },
  });
  server = createServer(async (req, res) => {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const decision = await guard()(req, res, raw ? JSON.parse(raw) : undefined);
    if (!decision) return;
    res.setHeader("content-type", "application/json");
    res.writeHead(200).end(JSON.stringify({ ok: true, replay: decision.reason.rule === "allowed" && decision.reason.replay === true }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
afterEach(() => expect(store.failures).toBe(0));

const send = (article: string, key?: string): RequestInit => ({ method: "POST", ...(key && { headers: { "Idempotency-Key": key } }) });

describe("retryDelay: how long to wait, from the server's own answer (spec §7, §8)", () => {
  it("spec §7 rate_limited: a spent budget's Retry-After is whole seconds", async () => {
    reset({ budgets: { audience: { limit: 1, window: 60 } } });
    expect((await fetch(`${base}/newsletters/nl_1/subscribers`)).status).toBe(200);
    now += 15_000;
    const refused = await fetch(`${base}/newsletters/nl_1/subscribers`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("Retry-After")).toBe("45");
    expect(await retryDelay(refused)).toBe(45_000);
    // the body is still the caller's to read
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
  });

  it("spec §7: a daily cap's Retry-After is in hours; its message says it is a daily limit", async () => {
    reset({ caps: { dispatch: { limit: 1 } } });
    expect((await fetch(`${base}/articles/a_1/send`, send("a_1"))).status).toBe(200);
    const capped = await fetch(`${base}/articles/a_2/send`, send("a_2"));
    expect(capped.status).toBe(429);
    expect(capped.headers.get("Retry-After")).toBe("14");
    expect(await retryDelay(capped)).toBe(14 * 3_600_000);
  });

  it("a server configured with dailyRetryAfter: seconds says so in the message, and the delay is read in seconds", async () => {
    reset({ caps: { dispatch: { limit: 1 } }, dailyRetryAfter: "seconds" });
    await fetch(`${base}/articles/a_1/send`, send("a_1"));
    const capped = await fetch(`${base}/articles/a_2/send`, send("a_2"));
    expect(capped.headers.get("Retry-After")).toBe(String(14 * 3600));
    // the message names the unit: read it from the body, or tell retryDelay the server's unit
    expect(retryDelay(capped, { body: await capped.clone().text() })).toBe(14 * 3_600_000);
    expect(retryDelay(capped, { dailyRetryAfter: "seconds" })).toBe(14 * 3_600_000);
  });

  it("dailyRetryAfter: the unit of a daily cap whose message does not name it", async () => {
    const body = JSON.stringify({ error: { code: "rate_limited", message: "The daily send limit is reached." } });
    const answer = () => new Response(body, { status: 429, headers: { "Retry-After": "3" } });
    expect(retryDelay(answer(), { body })).toBe(3 * 3_600_000);
    expect(retryDelay(answer(), { body: JSON.parse(body) })).toBe(3 * 3_600_000);
    expect(retryDelay(answer(), { body, dailyRetryAfter: "seconds" })).toBe(3_000);
    // a budget's message is never read as hours
    const spent = JSON.stringify({ error: { code: "rate_limited", message: "The write budget is spent." } });
    expect(retryDelay(new Response(spent, { status: 429, headers: { "Retry-After": "3" } }), { body: spent, dailyRetryAfter: "hours" })).toBe(3_000);
    // no body given and no RateLimit-* headers to tell: seconds (a retry that comes early is refused again; hours for a budget would wait far too long)
    expect(retryDelay(answer())).toBe(3_000);
  });

  it("DESIGN Beyond: retryDelay answers at once, a number or undefined, never a Promise; it reads no body, so the caller still can (found by a black-box review)", async () => {
    reset({ caps: { dispatch: { limit: 1 } } });
    await fetch(`${base}/articles/a_1/send`, send("a_1"));
    const capped = await fetch(`${base}/articles/a_2/send`, send("a_2"));
    const wait = retryDelay(capped);
    expect(wait).toBe(14 * 3_600_000);
    expect(capped.bodyUsed).toBe(false);
    expect(((await capped.json()) as { error: { message: string } }).error.message).toMatch(/daily/);
    expect(retryDelay(new Response("{}", { status: 403 }))).toBeUndefined();
  });

  it("from the headers alone, a daily cap that took a budget's last request (RateLimit-Remaining 0) is still told from a spent budget: its RateLimit-Reset is not its Retry-After", () => {
    const daily = new Response("", { status: 429, headers: { "Retry-After": "5", "RateLimit-Remaining": "0", "RateLimit-Reset": "42" } });
    expect(retryDelay(daily)).toBe(5 * 3_600_000);
    const budget = new Response("", { status: 429, headers: { "Retry-After": "42", "RateLimit-Remaining": "0", "RateLimit-Reset": "42" } });
    expect(retryDelay(budget)).toBe(42_000);
  });

  it("no readable body: a 429 with requests remaining in the budgets is a daily cap (hours); one with none left is a budget (seconds)", async () => {
    reset({ caps: { dispatch: { limit: 1 } } });
    await fetch(`${base}/articles/a_1/send`, send("a_1"));
    const capped = await fetch(`${base}/articles/a_2/send`, send("a_2"));
    await capped.text(); // the body is consumed: only the headers are left to read
    expect(capped.headers.get("RateLimit-Remaining")).not.toBe("0");
    expect(await retryDelay(capped)).toBe(14 * 3_600_000);
    reset({ budgets: { audience: { limit: 1, window: 60 } } });
    await fetch(`${base}/newsletters/nl_1/subscribers`);
    const throttled = await fetch(`${base}/newsletters/nl_1/subscribers`);
    await throttled.text();
    expect(await retryDelay(throttled)).toBe(60_000);
  });

  it("RFC 9110: Retry-After as an HTTP date; without Retry-After, RateLimit-Reset when RateLimit-Remaining is 0", async () => {
    const at = new Date(T0 + 90_000).toUTCString();
    expect(await retryDelay(new Response(null, { status: 429, headers: { "Retry-After": at } }), { now: () => T0 })).toBe(90_000);
    expect(await retryDelay(new Response(null, { status: 429, headers: { "RateLimit-Remaining": "0", "RateLimit-Reset": "7" } }))).toBe(7_000);
    // the other two date forms RFC 9110 reads
    expect(await retryDelay(new Response(null, { status: 503, headers: { "Retry-After": "Sunday, 22-Nov-26 10:01:30 GMT" } }), { now: () => T0 })).toBe(90_000);
  });

  it("spec §7 'not before Retry-After': a Retry-After that is neither whole seconds nor a date (1.5, -1) is not read as retry-now (found by a black-box review)", async () => {
    for (const value of ["1.5", "-1", "1e3", "soon"]) {
      const refused = new Response(null, { status: 429, headers: { "Retry-After": value, "RateLimit-Remaining": "0", "RateLimit-Reset": "7" } });
      expect(await retryDelay(refused, { now: () => T0 }), value).toBe(7_000);
      const unavailable = new Response(null, { status: 503, headers: { "Retry-After": value } });
      expect(await retryDelay(unavailable, { now: () => T0, random: () => 0 }), value).toBeGreaterThan(0);
    }
  });

  it("spec §7 insufficient_scope 'Retrying: no': 403, 404, 409 and 400 answer undefined", async () => {
    reset({});
    const forbidden = await fetch(`${base}/newsletters/nl_1/insights`);
    expect(forbidden.status).toBe(403);
    const missing = await fetch(`${base}/newsletters/nl_2/articles`);
    expect(missing.status).toBe(404);
    await fetch(`${base}/articles/a_1/send`, send("a_1", "k_conflict"));
    const conflict = await fetch(`${base}/articles/a_2/send`, send("a_2", "k_conflict"));
    expect(conflict.status).toBe(409);
    const invalid = await fetch(`${base}/articles/a_1/test-send`, { method: "POST", body: JSON.stringify({ to: Array(6).fill("x@example.com") }) });
    expect(invalid.status).toBe(400);
    for (const response of [forbidden, missing, conflict, invalid]) expect(await retryDelay(response), String(response.status)).toBeUndefined();
    expect(await retryDelay(await fetch(`${base}/rate-limit`))).toBeUndefined();
  });

  it("DESIGN §12: a 503 from a failed store is retried with exponential backoff", async () => {
    reset({});
    store.failures = 1;
    const unavailable = await fetch(`${base}/newsletters/nl_1/articles`);
    expect(unavailable.status).toBe(503);
    const delays = await Promise.all([0, 1, 2, 10].map((attempt) => retryDelay(unavailable.clone(), { attempt, random: () => 1, baseDelayMs: 500 })));
    expect(delays).toEqual([500, 1000, 2000, 30_000]);
  });
});

describe("withRetry: the same request again, after the wait and not before (spec §1.4, §7)", () => {
  it("waits exactly Retry-After for a spent budget and then succeeds", async () => {
    reset({ budgets: { audience: { limit: 1, window: 60 } } });
    const get = client();
    expect((await get(`${base}/newsletters/nl_1/subscribers`)).status).toBe(200);
    now += 20_000;
    const response = await get(`${base}/newsletters/nl_1/subscribers`);
    expect(response.status).toBe(200);
    expect(waits).toEqual([40_000]);
    expect(seen.map((s) => s.status)).toEqual([200, 429, 200]);
  });

  it("spec §1.4: a write is retried with the caller's Idempotency-Key", async () => {
    reset({ budgets: { write: { limit: 1, window: 60 } } });
    const post = client();
    expect((await post(`${base}/articles/a_8/send`, send("a_8", "idem-41"))).status).toBe(200);
    const response = await post(`${base}/articles/a_9/send`, send("a_9", "idem-42"));
    expect(response.status).toBe(200);
    expect(seen.slice(1).map((s) => [s.status, s.idempotencyKey])).toEqual([
      [429, "idem-42"],
      [200, "idem-42"],
    ]);
  });

  it("a write without a key gets one random key, the same on every attempt; a 503 then counts the send once (spec §8)", async () => {
    reset({ caps: { dispatch: { limit: 1 } } });
    store.failures = 2;
    const events: number[] = [];
    const post = client({ onRetry: (e) => events.push(e.delayMs) });
    const response = await post(new Request(`${base}/articles/a_1/send`, { method: "POST", body: JSON.stringify({ note: "a body sent three times" }) }));
    expect(response.status).toBe(200);
    const keys = seen.map((s) => s.idempotencyKey);
    expect(seen.map((s) => s.status)).toEqual([503, 503, 200]);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(events).toEqual([375, 750]); // equal jitter at 0.5: ¾ of 500, then of 1000
    // the one dispatch of the day is used: a new send is capped
    expect((await fetch(`${base}/articles/a_2/send`, send("a_2", "other"))).status).toBe(429);
  });

  it("a GET carries no Idempotency-Key", async () => {
    reset({});
    await client()(`${base}/newsletters/nl_1/articles`);
    expect(seen[0]!.idempotencyKey).toBeUndefined();
  });

  it("a daily cap's hours exceed maxWaitMs: the 429 is returned at once, with its body, and not sent again", async () => {
    reset({ caps: { dispatch: { limit: 1 } } });
    const post = client({ maxWaitMs: 60_000 });
    await post(`${base}/articles/a_1/send`, { method: "POST" });
    const capped = await post(`${base}/articles/a_2/send`, { method: "POST" });
    expect(capped.status).toBe(429);
    expect(((await capped.json()) as { error: { message: string } }).error.message).toContain("daily limit");
    expect(waits).toEqual([]);
    expect(seen).toHaveLength(2);
  });

  it("403, 404, 409 and 400 are returned after one attempt", async () => {
    reset({});
    const call = client();
    expect((await call(`${base}/newsletters/nl_1/insights`)).status).toBe(403);
    expect((await call(`${base}/newsletters/nl_2/articles`)).status).toBe(404);
    await call(`${base}/articles/a_1/send`, send("a_1", "k_1"));
    expect((await call(`${base}/articles/a_2/send`, send("a_2", "k_1"))).status).toBe(409);
    expect((await call(`${base}/articles/a_1/test-send`, { method: "POST", body: JSON.stringify({ to: [] }) })).status).toBe(400);
    expect(seen).toHaveLength(5);
    expect(waits).toEqual([]);
  });

  it("maxAttempts bounds the attempts: the last refusal is returned", async () => {
    reset({});
    store.failures = 3;
    const response = await client({ maxAttempts: 3 })(`${base}/newsletters/nl_1/articles`);
    expect(response.status).toBe(503);
    expect(seen).toHaveLength(3);
    await fetch(`${base}/newsletters/nl_1/articles`); // uses up the remaining failure
  });

  it("a network error is retried with backoff; once attempts run out it is thrown", async () => {
    reset({});
    const closed = await new Promise<string>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(`http://127.0.0.1:${port}`));
      });
    });
    await expect(client({ maxAttempts: 2 })(`${closed}/newsletters/nl_1/articles`)).rejects.toThrow();
    expect(waits).toHaveLength(1);
  });
});

describe("client options: host mistakes throw, naming the option (DESIGN §10; found by a new-user review)", () => {
  const answer429 = (retryAfter: string) => async () => new Response(JSON.stringify({ error: { code: "rate_limited", message: "budget general spent" } }), { status: 429, headers: { "Retry-After": retryAfter, "RateLimit-Remaining": "0", "RateLimit-Reset": retryAfter } });

  it("maxAttempts NaN (an unset variable through Number()) retried without end: it throws PolicyConfigError naming maxAttempts", async () => {
    let calls = 0;
    const counted = async () => (calls++, new Response(null, { status: 503 }));
    for (const maxAttempts of [Number.NaN, 0, 1.5, Infinity, -1]) {
      expect(() => withRetry(counted, { maxAttempts, sleep: async () => undefined })).toThrow(expect.objectContaining({ name: "PolicyConfigError", field: "maxAttempts" }));
    }
    expect(calls).toBe(0);
  });

  it("maxWaitMs NaN let a daily cap's 20 hours be waited: it throws naming maxWaitMs; attempt, baseDelayMs and dailyRetryAfter are checked too", () => {
    expect(() => withRetry(fetch, { maxWaitMs: Number.NaN })).toThrow(expect.objectContaining({ name: "PolicyConfigError", field: "maxWaitMs" }));
    expect(() => withRetry(fetch, { maxWaitMs: -1 })).toThrow(expect.objectContaining({ field: "maxWaitMs" }));
    expect(() => withRetry(fetch, { baseDelayMs: Number.NaN })).toThrow(expect.objectContaining({ field: "baseDelayMs" }));
    expect(() => withRetry(fetch, { sleep: 5 as unknown as () => Promise<void> })).toThrow(expect.objectContaining({ field: "sleep" }));
    const refused = { status: 503, headers: new Headers() };
    expect(() => retryDelay(refused, { attempt: Number.NaN })).toThrow(expect.objectContaining({ name: "PolicyConfigError", field: "attempt" }));
    expect(() => retryDelay(refused, { dailyRetryAfter: "minutes" as "hours" })).toThrow(expect.objectContaining({ field: "dailyRetryAfter" }));
    expect(retryDelay(refused, { attempt: 2, random: () => 0 })).toBe(1000);
    expect(withRetry(fetch, { maxWaitMs: Infinity })).toBeTypeOf("function");
  });

  it("a response retryDelay cannot read, a random outside 0 to 1 and a body that is neither JSON text nor an object throw naming them (a bare TypeError, a 1.5 s wait past the backoff, and a body ignored without a word; found by a new-user review)", () => {
    expect(() => retryDelay(null as never)).toThrow(expect.objectContaining({ name: "PolicyConfigError", field: "response" }));
    expect(() => retryDelay({ status: 429, headers: { "Retry-After": "1" } } as never)).toThrow(expect.objectContaining({ field: "response.headers" }));
    for (const status of [502, 503, 504]) expect(() => retryDelay({ status, headers: { "Retry-After": "1" } } as never)).toThrow(expect.objectContaining({ field: "response.headers" }));
    expect(() => retryDelay({ status: "429", headers: new Headers() } as never)).toThrow(expect.objectContaining({ field: "response.status" }));
    // headers are asked for only where they are read: a 200 from a test double without them is no retry, as before
    expect(retryDelay({ status: 200 } as never)).toBeUndefined();
    const refused = { status: 503, headers: new Headers() };
    expect(() => retryDelay(refused, { random: () => 5 })).toThrow(expect.objectContaining({ field: "random" }));
    expect(() => retryDelay(refused, { random: () => -0.1 })).toThrow(expect.objectContaining({ field: "random" }));
    expect(() => retryDelay(refused, { random: () => Number.NaN })).toThrow(expect.objectContaining({ field: "random" }));
    expect(retryDelay(refused, { random: () => 0.5, baseDelayMs: 100 })).toBe(75);
    expect(() => retryDelay(refused, { body: 5 })).toThrow(expect.objectContaining({ field: "body" }));
    expect(() => retryDelay(refused, { body: null })).toThrow(expect.objectContaining({ field: "body" }));
  });

  it("spec §7: a 429's Retry-After is at least 1, so a 0 (another server's) waits one unit, not a retry at once (found by a new-user review)", () => {
    const spent = { status: 429, headers: new Headers({ "Retry-After": "0", "RateLimit-Remaining": "0", "RateLimit-Reset": "0" }) };
    expect(retryDelay(spent)).toBe(1000);
    expect(retryDelay({ status: 429, headers: new Headers({ "Retry-After": "0" }) }, { body: { error: { message: "The daily limit is reached" } } })).toBe(3_600_000);
    // a 503's Retry-After of 0 is the server's word: now
    expect(retryDelay({ status: 503, headers: new Headers({ "Retry-After": "0" }) })).toBe(0);
  });

  it("a misspelt option throws naming it (maxAtempts kept its default of 3 without a word; found by a docs review)", () => {
    expect(() => withRetry(fetch, { maxAtempts: 5 } as never)).toThrow(expect.objectContaining({ name: "PolicyConfigError", field: "maxAtempts" }));
    expect(() => withRetry(fetch, { maxWaitMS: 1_000 } as never)).toThrow(expect.objectContaining({ field: "maxWaitMS", message: expect.stringContaining("known: dailyRetryAfter") }));
    // retryDelay's own attempt and body are not withRetry's (it counts attempts and reads the body itself)
    expect(() => withRetry(fetch, { attempt: 1 } as never)).toThrow(expect.objectContaining({ field: "attempt" }));
    const refused = { status: 503, headers: new Headers() };
    expect(() => retryDelay(refused, { atempt: 2 } as never)).toThrow(expect.objectContaining({ field: "atempt" }));
    expect(retryDelay(refused, { attempt: 1, random: () => 0, body: undefined, now: () => 0, baseDelayMs: 100, maxBackoffMs: 1_000, dailyRetryAfter: "hours" })).toBe(100);
  });

  it("spec §7 'after Retry-After, and not before': a wait longer than a timer takes (2^31 ms) is not cut to 1 ms by the default sleep", async () => {
    let calls = 0;
    const once = answer429("3000000"); // 3e9 ms: Node fired such a timer after 1 ms
    const fetching = withRetry(async () => (calls++, once()), { maxWaitMs: Infinity, maxAttempts: 2 });
    const controller = new AbortController();
    const outcome = fetching("http://127.0.0.1:9/never", { signal: controller.signal }).then(
      () => "answered",
      () => "aborted",
    );
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(calls).toBe(1); // still waiting, not retried
    controller.abort();
    expect(await outcome).toBe("aborted");
    expect(calls).toBe(1);
  });
});
