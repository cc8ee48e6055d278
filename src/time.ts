/** The largest time, in ms from the epoch either way, that a `Date` can hold (ECMAScript: ±8.64e15). */
export const MAX_TIME = 8.64e15;
