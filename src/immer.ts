/**
 * The library's own immer: `produce` of a private `Immer` instance. A host that imports immer too
 * shares its module, and its global settings (`setAutoFreeze(false)`, say) would otherwise reach
 * the snapshots the pure API hands back; with a private instance they never do. It freezes what it
 * hands back, deeply: a snapshot restored from JSON (unfrozen) is frozen by the first change, and
 * the parts a change builds are frozen already (snapshot.ts), so later changes find nothing to do.
 */
import { Immer, type Draft } from "immer";

const immer = new Immer({ autoFreeze: true });

/**
 * The next snapshot: `base` through `recipe` (immer's `produce`), frozen.
 *
 * @param base - the snapshot to start from.
 * @param recipe - changes the draft, or returns the new top level whole.
 * @returns the same object when the recipe changed nothing, else a new frozen one.
 */
export function nextSnapshot<T extends object>(base: T, recipe: (draft: Draft<T>) => T | void): T {
  return immer.produce(base, recipe as (draft: Draft<T>) => void) as T;
}
