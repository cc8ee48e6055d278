/**
 * The library's own immer: `produce` of a private `Immer` instance. A host that imports immer too
 * shares its module, and its global settings (`setAutoFreeze(false)`, say) would otherwise reach
 * the snapshots the pure API hands back; with a private instance they never do.
 *
 * What immer is handed is frozen already: the parts a change builds are frozen as they are built
 * (snapshot.ts), the parts it keeps come frozen from the snapshot before, and the new top level is
 * frozen here. Immer's `produce` then finds nothing to walk (its finalize and its freeze stop at a
 * frozen value), where a new top level left to immer to freeze cost ~1.3 µs (`npm run bench:immer`).
 * The recipe hands back the new top level whole and never reads a draft, so `produce` is given no
 * base to draft: a draft of the snapshot before (a Proxy and its scope, made and revoked unread) was
 * ~0.2 µs of the ~0.27 µs `produce` cost a change; without it, ~0.06 µs.
 */
import { Immer } from "immer";

const immer = new Immer({ autoFreeze: true });

/**
 * Freezes every object below `value`, frozen or not (immer's deep `freeze` stops at a frozen object,
 * and a snapshot restored from JSON has unfrozen parts below the frozen ones a change builds).
 */
function freezeAll(value: unknown): void {
  if (typeof value !== "object" || value === null) return;
  Object.freeze(value);
  for (const key of Object.keys(value)) freezeAll((value as Record<string, unknown>)[key]);
}

/**
 * A snapshot as the engine writes it: its three kinds frozen (all below them is, too). Its top level
 * is not asked: the next snapshot always has a new one (a host's `{ ...usage }` is still sealed).
 */
function isSealed(base: { readonly windows?: unknown; readonly caps?: unknown; readonly keys?: unknown }): boolean {
  return Object.isFrozen(base.windows) && Object.isFrozen(base.caps) && Object.isFrozen(base.keys);
}

/**
 * The next snapshot: immer's `produce` over `base`, whose recipe hands back `next`, the new top
 * level whole, frozen. Over a snapshot restored from JSON (unfrozen), what `next` keeps of it is
 * frozen through, once: the snapshot after is sealed.
 *
 * @param base - the snapshot to start from.
 * @param next - the new top level: every part of it frozen, or kept from `base`.
 * @returns a new frozen snapshot.
 */
export function nextSnapshot<T extends { readonly windows?: unknown; readonly caps?: unknown; readonly keys?: unknown }>(base: T, next: T): T {
  // what `next` kept of an unsealed base is frozen through, and nothing else of the host's object
  if (!isSealed(base)) for (const kind of [next.windows, next.caps, next.keys]) freezeAll(kind);
  // produced from no base: the recipe replaces the top level whole, so a draft of `base` (a Proxy and
  // its scope, created and revoked unread: ~0.2 µs of ~0.27 µs a change) would be made for nothing
  return immer.produce(undefined as unknown, (): unknown => Object.freeze(next)) as T;
}

/**
 * `snapshot` frozen through: itself when the engine wrote it (its kinds frozen, all below them too),
 * else (restored from JSON) frozen in place, once. For a snapshot handed back unchanged.
 */
export function sealed<T extends { readonly windows?: unknown; readonly caps?: unknown; readonly keys?: unknown }>(snapshot: T): T {
  if (!isSealed(snapshot)) freezeAll(snapshot);
  return Object.freeze(snapshot);
}
