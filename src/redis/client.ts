/**
 * The one thing the Redis store asks of a client: send `EVALSHA` or `EVAL` and return the reply.
 * Every client library can do that in one line, so the store depends on none of them.
 */
import type { Script } from "./scripts.js";

/**
 * Sends one `EVALSHA` or `EVAL` command and resolves with Redis's reply (rejecting on an error reply).
 * `args` are the command's arguments after its name: the SHA-1 or script, the number of keys, the keys,
 * then the script's arguments.
 *
 * @example
 * // ioredis v5
 * const call: RedisCall = (command, args) => redis.call(command, args);
 * // node-redis v5
 * const call: RedisCall = (command, args) => client.sendCommand([command, ...args]);
 */
export type RedisCall = (command: "EVALSHA" | "EVAL", args: string[]) => Promise<unknown>;

/**
 * The store gave up waiting for Redis: the command may or may not have run. A retry with the same
 * request id is answered from the remembered outcome, so it never counts twice.
 *
 * @example
 * const policy = createPolicy({
 *   store,
 *   onStoreError: (error) => { if (error instanceof RedisTimeoutError) metrics.increment("redis.timeout"); },
 * });
 */
export class RedisTimeoutError extends Error {
  /** How long the store waited (ms). */
  readonly timeoutMs: number;

  /**
   * @param timeoutMs - how long the store waited.
   * @param what - which script timed out.
   */
  constructor(timeoutMs: number, what: string) {
    super(`newsletter-policy/redis: no reply from Redis within ${timeoutMs} ms (${what})`);
    this.name = "RedisTimeoutError";
    this.timeoutMs = timeoutMs;
  }
}

function isNoScript(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return message.startsWith("NOSCRIPT") || message.includes("NOSCRIPT ");
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new RedisTimeoutError(timeoutMs, what)), timeoutMs);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** How the store talks to Redis: timeouts, retries on timeout, and `EVALSHA` → `EVAL` on `NOSCRIPT`. */
export interface Runner {
  readonly call: RedisCall;
  readonly timeoutMs: number;
  readonly retries: number;
}

async function once(runner: Runner, script: Script, what: string, tail: string[]): Promise<unknown> {
  try {
    return await withTimeout(runner.call("EVALSHA", [script.sha, ...tail]), runner.timeoutMs, what);
  } catch (error) {
    // Redis restarted or SCRIPT FLUSH: EVAL runs the script and caches it again for EVALSHA
    if (!isNoScript(error)) throw error;
    return withTimeout(runner.call("EVAL", [script.source, ...tail]), runner.timeoutMs, what);
  }
}

/**
 * Runs a script with its keys and arguments: one round trip (two after a script cache flush).
 * Only a timeout is retried: every script is safe to repeat (charge remembers its outcome by
 * request id, release is idempotent, read writes nothing); an error reply would only repeat itself.
 */
export async function run(runner: Runner, script: Script, what: string, keys: readonly string[], args: readonly string[]): Promise<unknown> {
  const tail = [String(keys.length), ...keys, ...args];
  for (let attempt = 0; ; attempt++) {
    try {
      return await once(runner, script, what, tail);
    } catch (error) {
      if (!(error instanceof RedisTimeoutError) || attempt >= runner.retries) throw error;
    }
  }
}
