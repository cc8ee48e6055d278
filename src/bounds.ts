/** Bounds on what is read of a descriptor (docs/security.md). */
export const BOUNDS = Object.freeze({
  /** `path`, with its query string. */
  path: 4096,
  /** `method`. */
  method: 16,
  /** Query parameters (names, counting a repeated name once per value) in `query` or the query string. */
  queryParams: 100,
  /** One query name. */
  queryName: 256,
  /** One query value. */
  queryValue: 4096,
  /** `newsletter`. */
  newsletter: 256,
  /** `idempotencyKey` (spec: 1 to 255 visible ASCII characters; longer is refused, never read further). */
  idempotencyKey: 255,
  /** One address in a test send's `to` (RFC 5321: 254). */
  address: 254,
  /** One id in a body list such as tagging's `subscribers`. */
  listId: 255,
});
