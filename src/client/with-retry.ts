/**
 * A Fetch wrapper that retries the way spec §1.4 and §7 ask: the same request after `Retry-After`
 * and not before, with the same `Idempotency-Key` for a write, and never when a retry cannot help.
 */
import { PolicyConfigError } from "../errors.js";
import { assertDelayOptions, retryDelay, type RetryDelayOptions } from "./retry-delay.js";

/** A Fetch-style function: the global `fetch`, undici's, or a framework's `app.request`. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** What {@link WithRetryOptions.onRetry} is told before each wait. */
export interface RetryEvent {
  /** 1 for the first retry. */
  readonly attempt: number;
  readonly delayMs: number;
  /** The refused answer, or the network error, that caused the retry. */
  readonly response?: Response;
  readonly error?: unknown;
  /** The `Idempotency-Key` every attempt of a write carries. */
  readonly idempotencyKey?: string;
}

/** Options of {@link withRetry}. */
export interface WithRetryOptions extends Pick<RetryDelayOptions, "dailyRetryAfter" | "baseDelayMs" | "maxBackoffMs" | "random" | "now"> {
  /** Longest single wait in ms (a number ≥ 0; `Infinity`: any wait); an answer that asks for more is returned as it is. Default 60 000. */
  maxWaitMs?: number;
  /** Most attempts in all, the first included: a whole number ≥ 1. Default 3. */
  maxAttempts?: number;
  /** Waits `ms`, rejecting when `signal` aborts. Default: a timer. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A new `Idempotency-Key` for a write that has none. Default `crypto.randomUUID()` (Web Crypto). */
  idempotencyKey?: () => string;
  /** Told before each wait; for logs. */
  onRetry?: (event: RetryEvent) => void;
}

const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * The longest delay a timer takes (2^31 − 1 ms, about 24.8 days): a longer one fires after 1 ms
 * (Node warns `TimeoutOverflowWarning`, browsers say nothing), so that a `Retry-After` of days
 * waited with `maxWaitMs: Infinity` was retried at once (found by a review).
 */
const TIMER_MAX_MS = 2 ** 31 - 1;

function timer(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const end = Date.now() + ms;
    let id: ReturnType<typeof setTimeout>;
    // a wait longer than a timer takes is waited in steps
    const step = (left: number) => {
      id = setTimeout(() => {
        const rest = end - Date.now();
        if (rest > 0 && left > TIMER_MAX_MS) return step(rest);
        signal?.removeEventListener("abort", abort);
        resolve();
      }, Math.min(left, TIMER_MAX_MS));
    };
    function abort() {
      clearTimeout(id);
      reject(signal!.reason);
    }
    step(ms);
    signal?.addEventListener("abort", abort, { once: true });
  });
}

/** withRetry's own options, checked once (a host mistake throws, naming the option; DESIGN §10). */
function assertRetryOptions(options: WithRetryOptions): void {
  if (typeof options !== "object" || options === null) throw new PolicyConfigError("withRetry options", "must be an object");
  const { maxAttempts, maxWaitMs } = options;
  if (maxAttempts !== undefined && !(Number.isSafeInteger(maxAttempts) && maxAttempts >= 1)) {
    throw new PolicyConfigError("maxAttempts", `must be a whole number ≥ 1 (attempts in all, the first included); got ${String(maxAttempts)}`);
  }
  if (maxWaitMs !== undefined && !(typeof maxWaitMs === "number" && maxWaitMs >= 0)) {
    throw new PolicyConfigError("maxWaitMs", `must be a number of ms ≥ 0 (Infinity: any wait); got ${String(maxWaitMs)}`);
  }
  for (const name of ["sleep", "idempotencyKey", "onRetry"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "function") throw new PolicyConfigError(name, `must be a function; got ${typeof options[name]}`);
  }
  assertDelayOptions(options, RETRY_OPTIONS);
}

/** The options {@link withRetry} hands on to `retryDelay` (WithRetryOptions picks them from RetryDelayOptions). */
const PASSED_ON = ["dailyRetryAfter", "baseDelayMs", "maxBackoffMs", "random", "now"] as const;
/** The names of {@link WithRetryOptions}: those it hands on, and its own. */
const RETRY_OPTIONS: readonly string[] = [...PASSED_ON, "maxWaitMs", "maxAttempts", "sleep", "idempotencyKey", "onRetry"];

function isRequest(input: unknown): input is Request {
  return typeof Request !== "undefined" && input instanceof Request;
}

/** A response's body text, read from a clone (the caller's copy stays unread); undefined when it cannot be read. */
async function errorBodyOf(response: Response): Promise<string | undefined> {
  if (response.bodyUsed) return undefined;
  try {
    return await response.clone().text();
  } catch {
    return undefined;
  }
}

/**
 * Wraps a Fetch-style function so that refused requests are sent again when, and only when, a retry
 * can help (see `retryDelay`): after `Retry-After` for a 429, with backoff for a 502–504 or a
 * network error. Every attempt of a write (any method but GET, HEAD, OPTIONS) carries the same
 * `Idempotency-Key`: the caller's, or a new random one added to the first attempt, so the server
 * counts a retried send once (spec §8). A wait longer than `maxWaitMs` (a daily cap's hours) is not
 * waited: that answer is returned as it is, like every refusal that retrying cannot fix.
 *
 * @param fetch - the function to wrap, e.g. `globalThis.fetch`.
 * @param options - `maxWaitMs` (default 60 000), `maxAttempts` (default 3), `dailyRetryAfter`, backoff settings, `sleep`, `onRetry`.
 * @returns a function with `fetch`'s signature.
 * @throws PolicyConfigError when an option is not what it must be (`maxAttempts: NaN`), naming it.
 * @example
 * const fetchWithRetry = withRetry(fetch, { maxWaitMs: 30_000 });
 * const response = await fetchWithRetry("https://api.example.com/articles/a_1/send", { method: "POST" });
 */
export function withRetry(fetch: FetchLike, options: WithRetryOptions = {}): FetchLike {
  if (typeof fetch !== "function") throw new PolicyConfigError("fetch", `must be a Fetch-style function; got ${typeof fetch}`);
  assertRetryOptions(options);
  const maxAttempts = options.maxAttempts ?? 3;
  const maxWaitMs = options.maxWaitMs ?? 60_000;
  const sleep = options.sleep ?? timer;
  const newKey = options.idempotencyKey ?? (() => globalThis.crypto.randomUUID());
  // what retryDelay reads of the options (it refuses names it does not know)
  const delayOptions: RetryDelayOptions = {};
  for (const name of PASSED_ON) {
    if (options[name] !== undefined) (delayOptions as Record<string, unknown>)[name] = options[name];
  }

  return async (input, init) => {
    const method = (init?.method ?? (isRequest(input) ? input.method : "GET")).toUpperCase();
    const headers = new Headers(isRequest(input) ? input.headers : undefined);
    new Headers(init?.headers).forEach((value, name) => headers.set(name, value));
    let idempotencyKey: string | undefined;
    if (!SAFE.has(method)) {
      idempotencyKey = headers.get("Idempotency-Key") ?? newKey();
      headers.set("Idempotency-Key", idempotencyKey);
    }
    // A stream body can be sent once only; anything else (string, bytes, form, a Request's body via clone) again.
    const once = typeof ReadableStream !== "undefined" && init?.body instanceof ReadableStream;
    const signal = init?.signal ?? (isRequest(input) ? input.signal : undefined);
    const send = () => fetch(isRequest(input) ? input.clone() : input, { ...init, method, headers });

    for (let attempt = 1; ; attempt++) {
      let response: Response | undefined;
      let error: unknown;
      try {
        response = await send();
      } catch (caught) {
        if (signal?.aborted) throw caught;
        error = caught;
      }
      const last = attempt >= maxAttempts || once;
      // a network error: the request may or may not have arrived; a read or a keyed write is safe to send again
      // a 429's error body says whether a daily cap refused (its message), read from a clone so the caller keeps it
      const body = response?.status === 429 ? await errorBodyOf(response) : undefined;
      const delay = response !== undefined ? retryDelay(response, { ...delayOptions, attempt: attempt - 1, ...(body !== undefined && { body }) }) : retryDelay({ status: 503, headers: new Headers() }, { ...delayOptions, attempt: attempt - 1 });
      if (last || delay === undefined || delay > maxWaitMs) {
        if (response !== undefined) return response;
        throw error;
      }
      options.onRetry?.({ attempt, delayMs: delay, ...(response ? { response } : { error }), ...(idempotencyKey === undefined ? {} : { idempotencyKey }) });
      // the refused answer's body is not needed any more; free its connection
      await response?.body?.cancel().catch(() => undefined);
      await sleep(delay, signal ?? undefined);
    }
  };
}
