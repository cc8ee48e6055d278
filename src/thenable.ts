/** What `await` would wait for: an object or function with a callable `then` (a host's store or hook may return one). */
export function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as PromiseLike<T>).then === "function";
}
