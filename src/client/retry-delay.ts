/**
 * How long a client should wait before sending a refused request again, read from the answer the
 * way spec §7 and §8 write it: `Retry-After` (whole seconds, or hours for a daily cap), the
 * `RateLimit-*` headers and the error body. Runs anywhere the Fetch API does; no Node built-ins.
 */

/** The parts of a Fetch `Response` that {@link retryDelay} reads. A real `Response` fits. */
export interface ResponseLike {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  /** Read by `withRetry` for the error body, without consuming the caller's copy; `retryDelay` reads no body. */
  clone?(): { text(): Promise<string> };
  readonly bodyUsed?: boolean;
}

/** The names of {@link RetryDelayOptions}. */
export const DELAY_OPTIONS: readonly string[] = ["dailyRetryAfter", "attempt", "baseDelayMs", "maxBackoffMs", "random", "now", "body"];

/** Options of {@link retryDelay}. */
export interface RetryDelayOptions {
  /**
   * The unit of a daily cap's `Retry-After` when the error message does not name it: `hours` as the
   * spec says (default), or `seconds` for a server configured with `dailyRetryAfter: "seconds"`.
   * A message that names the unit ("Retry-After is in seconds") wins.
   */
  dailyRetryAfter?: "hours" | "seconds";
  /** Attempts already retried (0 after the first answer), for the backoff of a 503 without `Retry-After`. Default 0. */
  attempt?: number;
  /** First backoff step in ms; doubled per attempt. Default 500. */
  baseDelayMs?: number;
  /** Longest backoff in ms (not applied to a server's `Retry-After`). Default 30 000. */
  maxBackoffMs?: number;
  /** A number from 0 to 1 for backoff jitter (another throws, naming `random`). Default `Math.random`. */
  random?: () => number;
  /** The clock for an HTTP-date `Retry-After`, ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /**
   * The error body, when the caller has read it (parsed, or its JSON text): its message then says
   * whether a 429 is a daily cap's, and may name the unit. Without it the headers tell (see `retryDelay`).
   */
  body?: unknown;
}

import { PolicyConfigError } from "../errors.js";

const HOUR_MS = 3_600_000;
/** Answers a retry can fix: the budget or cap refills (429), or the server's store comes back (502–504). */
const BACKOFF_STATUSES = new Set([502, 503, 504]);

/** spec §7: the message of a daily cap "says it is a daily limit". */
const DAILY = /\bdaily\b/i;
const UNIT = /Retry-After is (?:measured )?in (hours|seconds)/i;

/** The message of an error body already read (an object, or its JSON text); undefined when it has none. */
function errorMessage(given: unknown): string | undefined {
  let body = given;
  if (typeof body === "string") {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined; // not JSON: there is no message to read
    }
  }
  const error = typeof body === "object" && body !== null ? (body as { error?: unknown }).error : undefined;
  const message = typeof error === "object" && error !== null ? (error as { message?: unknown }).message : undefined;
  return typeof message === "string" ? message : undefined;
}

/**
 * Whether a 429 with `Retry-After: <count>` is a daily cap's, from its headers alone. A spent
 * budget's 429 shows that budget (DESIGN §3, §5): `RateLimit-Remaining` 0 and `RateLimit-Reset`
 * equal to `Retry-After`, both its whole seconds to the window's end. A daily cap's 429 was charged
 * to budgets that had room: `RateLimit-Remaining` above 0, or 0 (this request took a budget's last
 * request) with a reset that is not its `Retry-After`, which counts hours. Only when a daily cap's
 * hours happen to equal that budget's seconds is it read as a budget's (a retry comes early and is
 * refused again); pass the error body (`options.body`) to read its message instead.
 */
function dailyByHeaders(response: ResponseLike, count: number): boolean {
  const remaining = response.headers.get("RateLimit-Remaining")?.trim();
  if (remaining !== undefined && /^\d+$/.test(remaining) && Number(remaining) > 0) return true;
  const reset = response.headers.get("RateLimit-Reset")?.trim();
  if (remaining === "0" && reset !== undefined && /^\d+$/.test(reset)) return Number(reset) !== count;
  return false;
}

/** `Retry-After` as a count of units, or as an HTTP date in ms from now (RFC 9110 §10.2.3). */
function readRetryAfter(value: string | null, now: () => number): { count: number } | { ms: number } | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return { count: Number(text) };
  // an HTTP date names a month and a time of day (IMF-fixdate, RFC 850, asctime); anything else
  // ("1.5", "-1", which Date.parse reads as past dates) is unreadable, never "retry now"
  if (!/[A-Za-z]{3}/.test(text) || !/\d{1,2}:\d{2}:\d{2}/.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isFinite(at) ? { ms: Math.max(0, at - now()) } : undefined;
}

function backoff(options: RetryDelayOptions): number {
  const base = options.baseDelayMs ?? 500;
  const cap = options.maxBackoffMs ?? 30_000;
  const step = Math.min(cap, base * 2 ** Math.max(0, options.attempt ?? 0));
  // "equal jitter": half the step for sure, half at random, so that many clients do not retry in step
  const r: unknown = (options.random ?? Math.random)();
  // what `random` gives is checked as it is used (5 made a wait past the longest backoff; found by a new-user review)
  if (typeof r !== "number" || !(r >= 0 && r <= 1)) throw new PolicyConfigError("random", `must return a number from 0 to 1 (Math.random's); got ${String(r)}`);
  return Math.round(step / 2 + (step / 2) * r);
}

/**
 * How long to wait before sending the same request again, or `undefined` when sending it again
 * cannot help: a 400, 403, 404 or 409 (and any other answer but 429, 502, 503 and 504) needs a
 * different request, a wider permission or a new key first (spec §7: `insufficient_scope` —
 * "Retrying: no").
 *
 * - 429: `Retry-After` (spec §7: whole seconds; for a daily cap hours — or seconds when the error
 *   message or `dailyRetryAfter` says so). Whether it is a daily cap is read from the error body's
 *   message when `options.body` gives it, else from the headers (see `dailyByHeaders`: a spent
 *   budget shows `RateLimit-Remaining: 0` and a `RateLimit-Reset` equal to `Retry-After`); without
 *   `Retry-After`, `RateLimit-Reset` when `RateLimit-Remaining` is 0; otherwise a backoff.
 * - 502, 503, 504: `Retry-After` when present, else exponential backoff with jitter.
 *
 * Synchronous (DESIGN: `retryDelay(response) // => ms to wait, or undefined`): it reads the status
 * and headers, and the error body only when the caller passes it (`options.body`); the response's
 * body is never read, so the caller still can.
 *
 * @param response - a Fetch `Response`, or anything with `status` and `headers.get`.
 * @param options - `dailyRetryAfter` (default `hours`), `attempt` and the backoff settings, `body` when already read.
 * @returns milliseconds to wait, or `undefined` when a retry cannot help.
 * @throws PolicyConfigError when an option is not what it must be (`attempt: NaN`), naming it.
 * @example
 * const response = await fetch(url);
 * const wait = retryDelay(response);
 * if (wait !== undefined && wait < 60_000) setTimeout(sendAgain, wait);
 */
export function retryDelay(response: ResponseLike, options: RetryDelayOptions = {}): number | undefined {
  assertResponse(response);
  assertDelayOptions(options);
  const now = options.now ?? Date.now;
  const status = response.status;
  if (status === 429 || BACKOFF_STATUSES.has(status)) assertHeaders(response);
  if (status === 429) {
    const after = readRetryAfter(response.headers.get("Retry-After"), now);
    if (after !== undefined && "ms" in after) return after.ms;
    if (after !== undefined) {
      // the error body's message says whether it is a daily limit, and may name the unit; without it, the headers tell
      const message = options.body === undefined ? undefined : errorMessage(options.body);
      const daily = message !== undefined ? DAILY.test(message) : dailyByHeaders(response, after.count);
      const unit = daily ? (message?.match(UNIT)?.[1]?.toLowerCase() ?? options.dailyRetryAfter ?? "hours") : "seconds";
      // spec §7, §8: a 429's Retry-After is at least 1 (a 0 from another server was a retry at once, found by a new-user review)
      return Math.max(1, after.count) * (unit === "hours" ? HOUR_MS : 1000);
    }
    const reset = response.headers.get("RateLimit-Reset");
    if (response.headers.get("RateLimit-Remaining")?.trim() === "0" && reset !== null && /^\d+$/.test(reset.trim())) return Number(reset.trim()) * 1000;
    return backoff(options);
  }
  if (BACKOFF_STATUSES.has(status)) {
    const after = readRetryAfter(response.headers.get("Retry-After"), now);
    if (after === undefined) return backoff(options);
    return "ms" in after ? after.ms : after.count * 1000;
  }
  return undefined;
}

/** What a value a host passed is, for messages: `typeof`, and null as null. */
function kindOf(value: unknown): string {
  return value === null ? "null" : typeof value;
}

/**
 * A response {@link retryDelay} can read: an object with a number `status`; its `headers.get` is
 * asked for where headers are read ({@link assertHeaders}). A plain object of headers, or null,
 * threw a bare TypeError (found by a new-user review).
 */
function assertResponse(response: unknown): asserts response is Pick<ResponseLike, "status"> {
  const r = response as Partial<ResponseLike> | null;
  if (typeof r !== "object" || r === null) throw new PolicyConfigError("response", `must be a Fetch Response (or { status, headers: { get(name) } }); got ${kindOf(r)}`);
  if (typeof r.status !== "number") throw new PolicyConfigError("response.status", `must be the HTTP status, a number; got ${typeof r.status}`);
}

/**
 * The headers of a response whose status a retry can fix, where they are read (a 200 from a test
 * double without them is answered as before: it threw once the check came first; found by a review).
 */
function assertHeaders(response: ResponseLike): void {
  const headers = response.headers as ResponseLike["headers"] | null | undefined;
  if (typeof headers !== "object" || headers === null || typeof headers.get !== "function") {
    throw new PolicyConfigError("response.headers", "must have get(name), as a Fetch Headers has (a plain object of headers: new Headers(object))");
  }
}

/**
 * The options of {@link retryDelay}, checked (a host mistake throws, naming the option): an
 * `attempt` of NaN made the backoff NaN ms, and a `baseDelayMs` of NaN the same.
 */
export function assertDelayOptions(options: RetryDelayOptions, known: readonly string[] = DELAY_OPTIONS): void {
  if (typeof options !== "object" || options === null) throw new PolicyConfigError("options", "must be an object");
  // a misspelt option (maxAtempts, maxWaitMS) would keep its default without a word (found by a docs review)
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) throw new PolicyConfigError(name, `is not an option here; known: ${known.join(", ")}`);
  }
  const { attempt, baseDelayMs, maxBackoffMs, dailyRetryAfter } = options;
  if (attempt !== undefined && !(Number.isSafeInteger(attempt) && attempt >= 0)) throw new PolicyConfigError("attempt", `must be a whole number ≥ 0 (retries made so far); got ${String(attempt)}`);
  for (const [name, value] of [["baseDelayMs", baseDelayMs], ["maxBackoffMs", maxBackoffMs]] as const) {
    if (value !== undefined && !(typeof value === "number" && Number.isFinite(value) && value >= 0)) throw new PolicyConfigError(name, `must be a finite number of ms ≥ 0; got ${String(value)}`);
  }
  if (dailyRetryAfter !== undefined && dailyRetryAfter !== "hours" && dailyRetryAfter !== "seconds") throw new PolicyConfigError("dailyRetryAfter", `must be "hours" or "seconds"; got ${String(dailyRetryAfter)}`);
  const body: unknown = options.body;
  if (body !== undefined && typeof body !== "string" && (typeof body !== "object" || body === null)) {
    throw new PolicyConfigError("body", `must be the error body already read: its JSON text or the parsed object; got ${kindOf(body)}`);
  }
  for (const name of ["random", "now"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "function") throw new PolicyConfigError(name, `must be a function; got ${typeof options[name]}`);
  }
}
