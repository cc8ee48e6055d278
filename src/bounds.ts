/** Bounds on what is read of a descriptor (docs/security.md). */
export const BOUNDS = Object.freeze({
  /** `path`, with its query string (Node's default request-line room is about 16 KiB: long cursors fit). */
  path: 16_384,
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
  /** Values (arrays, objects, primitives) of a body bound to an Idempotency-Key: its fingerprint reads all of them. */
  keyedBodyValues: 50_000,
  /** Characters of a keyed body's canonical JSON (about its JSON size): its fingerprint hashes all of it. */
  keyedBodyLength: 1_048_576,
  /**
   * Arrays and objects open inside one another in a keyed body (a value that holds itself is past
   * it): no request body nests this deep, and a 50 000-deep one cost more than a flat one of the
   * same size.
   */
  keyedBodyDepth: 256,
});
