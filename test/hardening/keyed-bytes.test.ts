/**
 * docs/security.md: bytes in a keyed write's body are bounded by their length before any is read.
 * A spy on the digest (the real one, passed through) shows what was hashed: a 10 MB typed array is
 * refused without its bytes being hashed. (The diff review found the first form of this test passing
 * with the length check removed: the check after the write refused it too, having hashed it all.)
 */
import { expect, it, vi } from "vitest";

vi.mock("../../src/sha256.js", async (original) => {
  const real = await original<typeof import("../../src/sha256.js")>();
  return { ...real, sha256BytesHex: vi.fn(real.sha256BytesHex) };
});

const { sha256BytesHex } = await import("../../src/sha256.js");
const { emptyUsage, evaluate } = await import("../../src/index.js");
const { BOUNDS } = await import("../../src/bounds.js");

const credential = { id: "k", kind: "api_key" as const, newsletters: { nl_1: { sending: "write" as const } } };

it("a keyed body of bytes past the length bound is refused before its bytes are hashed", () => {
  const hashed = vi.mocked(sha256BytesHex);
  hashed.mockClear();
  for (const body of [new Uint8Array(10_000_000), Buffer.alloc(BOUNDS.keyedBodyLength + 1), { a: "x".repeat(1000), b: new Uint8Array(BOUNDS.keyedBodyLength - 500) }]) {
    const { decision } = evaluate({ method: "POST", path: "/articles/a_1/send", newsletter: "nl_1", idempotencyKey: "K", body }, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: 0 });
    expect(decision.body?.error).toMatchObject({ code: "invalid_request", param: "body" });
  }
  // nothing but the fingerprint's own small texts hashed: no body's bytes
  expect(hashed.mock.calls.every(([bytes]) => bytes.length < 10_000)).toBe(true);
});

it("a key past the length bound is refused before it is copied (a review found the outcome test passing with the check removed)", () => {
  const stringify = vi.spyOn(JSON, "stringify");
  try {
    const body = { ["k".repeat(5_000_000)]: 1 };
    const { decision } = evaluate({ method: "POST", path: "/articles/a_1/send", newsletter: "nl_1", idempotencyKey: "K", body }, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: 0 });
    expect(decision.body?.error).toMatchObject({ code: "invalid_request", param: "body" });
    expect(stringify.mock.calls.every(([value]) => typeof value !== "string" || value.length < 1_000_000)).toBe(true);
  } finally {
    stringify.mockRestore();
  }
});
