/**
 * The calendar of the daily caps (DESIGN §6): which day a moment falls in, and when that day ends.
 * The one definition of a day; the Redis scripts compute the same in Lua (see docs/redis.md).
 */

/** A day in milliseconds. */
export const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The day a moment falls in, and when that day ends (midnight UTC by default).
 *
 * @param now - ms since the epoch.
 * @param offsetMs - the UTC offset (ms) of the time zone whose midnight starts the day: 1 h starts it at 23:00 UTC.
 * @returns `day`: whole days since the epoch at that day start; `resetAt`: when the day ends (ms).
 */
export function dayOf(now: number, offsetMs: number): { day: number; resetAt: number } {
  const day = Math.floor((now + offsetMs) / DAY_MS);
  return { day, resetAt: (day + 1) * DAY_MS - offsetMs };
}
