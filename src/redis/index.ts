/**
 * newsletter-policy/redis: budgets and daily caps shared by many server processes through Redis,
 * one Lua script (one round trip) per decision. Bring your own client: the store asks only for a
 * function that sends `EVALSHA`/`EVAL`.
 */
export { RedisStore } from "./store.js";
export { RedisOverloadError, RedisTimeoutError } from "./client.js";

export type { RedisStoreOptions } from "./store.js";
export type { RedisCall } from "./client.js";
