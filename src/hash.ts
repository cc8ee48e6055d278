/**
 * FNV-1a: a short, fast, stable hash of a string (not a secret). Used for the ids `evaluate` derives
 * from its inputs and for the buckets of the pure snapshot.
 */

/** FNV-1a's 32-bit offset basis and prime. */
export const FNV_BASIS = 0x811c9dc5;
export const FNV_PRIME = 16777619;
/** The basis and prime of the second, independent hash of a derived id (`inputId`, request-id.ts). */
export const FNV_BASIS_2 = 0x01000193;
export const FNV_PRIME_2 = 2246822519;

/** 32-bit FNV-1a of `text` (of its first `end` characters); a different `prime` gives an independent second hash. */
export function fnv1a(text: string, basis = FNV_BASIS, prime = FNV_PRIME, end = text.length): number {
  let h = basis;
  for (let i = 0; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), prime);
  return h >>> 0;
}
