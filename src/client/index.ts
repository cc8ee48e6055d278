/**
 * newsletter-policy/client: retry a newsletter API's refusals right. `retryDelay` reads how long to
 * wait (or that waiting cannot help); `withRetry` wraps `fetch` and sends writes again with the same
 * `Idempotency-Key`. No Node built-ins: browsers, Deno, Bun and workers.
 */
export { retryDelay } from "./retry-delay.js";
export { withRetry } from "./with-retry.js";
/** Thrown for a host mistake in the options (`maxAttempts: NaN`), naming the option. */
export { PolicyConfigError } from "../errors.js";

export type { ResponseLike, RetryDelayOptions } from "./retry-delay.js";
export type { FetchLike, RetryEvent, WithRetryOptions } from "./with-retry.js";
