/**
 * The peer a host would write instead of this library, shared by every bench: two
 * rate-limiter-flexible limiters (general, audience) charged all or nothing — consume general,
 * consume audience, and when audience refuses give back what general took.
 */
import { RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";

/** One decision of the two-budget peer for `key`: true when both budgets had room (both charged). */
export function consumeBoth(general: RateLimiterAbstract, audience: RateLimiterAbstract): (key: string) => Promise<boolean> {
  return async (key) => {
    try {
      await general.consume(key);
    } catch (refusal) {
      if (refusal instanceof RateLimiterRes) return false;
      throw refusal;
    }
    try {
      await audience.consume(key);
      return true;
    } catch (refusal) {
      if (!(refusal instanceof RateLimiterRes)) throw refusal;
      await general.reward(key); // all or nothing: give back what the first budget took
      return false;
    }
  };
}
