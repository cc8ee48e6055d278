/**
 * A Map in 64 shards by a hash of the key. V8 rehashes a Map whenever deletions leave it a quarter
 * full: one Map of a million entries then stalls one call while all of it is rehashed. Shards
 * keep each rehash to 1/64 of the entries.
 */
export class ShardedMap<V> {
  private readonly shards: Map<string, V>[] = Array.from({ length: 64 }, () => new Map<string, V>());
  size = 0;

  private shard(key: string): Map<string, V> {
    // FNV-1a of the length and the last 16 characters, where store keys differ (the subject's end,
    // the budget's name, the day): a shard only bounds a rehash, so keys that share a shard are
    // still found, and hashing a whole long key on every lookup cost more than the lookup
    let h = Math.imul(0x811c9dc5 ^ key.length, 16777619);
    for (let i = key.length > 16 ? key.length - 16 : 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
    return this.shards[(h >>> 0) & 63]!;
  }
  get(key: string): V | undefined {
    return this.shard(key).get(key);
  }
  set(key: string, value: V): void {
    const shard = this.shard(key);
    const before = shard.size;
    shard.set(key, value);
    this.size += shard.size - before;
  }
  delete(key: string): boolean {
    const deleted = this.shard(key).delete(key);
    if (deleted) this.size--;
    return deleted;
  }
  /** Every key, shard by shard (deleting the key in hand while iterating is safe). */
  *keys(): IterableIterator<string> {
    for (const shard of this.shards) yield* shard.keys();
  }
}
