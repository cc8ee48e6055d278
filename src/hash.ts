/**
 * FNV-1a: a short, fast, stable hash of a string (not a secret). Used for the ids `evaluate` derives
 * from its inputs and for the buckets of the pure snapshot.
 */

/** 32-bit FNV-1a of `text`; a different `prime` gives an independent second hash. */
export function fnv1a(text: string, basis = 0x811c9dc5, prime = 16777619): number {
  let h = basis;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), prime);
  return h >>> 0;
}
