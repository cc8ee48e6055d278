/**
 * Request descriptors for fuzzing, plain and hostile: getters (throwing and lazy), Proxies (lying,
 * throwing, revoked), sparse arrays, huge strings and objects, prototype keys. A seeded generator
 * (no fast-check shrinking: the point is volume, a million descriptors in minutes); a failure prints
 * the seed and index, and `descriptorAt(seed, index)` rebuilds that one descriptor.
 */

/** mulberry32: a small seeded PRNG. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HUGE = "x".repeat(10_000_000);
const BIG_KEYS: Record<string, string> = {};
for (let i = 0; i < 100_000; i++) BIG_KEYS[`k${i}`] = "v";
const BIG_LIST = Array.from({ length: 100_000 }, () => "a@x.io");

const PATHS = [
  "/rate-limit", "/me", "/memberships", "/newsletters/nl_1/subscribers?limit=100", "/newsletters/nl_1/subscribers?limit=0",
  "/newsletters/nl_1/articles?status=draft", "/newsletters/nl_1/articles?status=sent&expand=stats", "/newsletters/nl_1/articles?tag=x",
  "/newsletters/nl_2/settings", "/newsletters/nl_1/webhooks", "/articles/a_1/send", "/articles/a_1/schedule", "/articles/a_1/test-send",
  "/tags/t_1/subscribers", "/newsletters/nl_1/articles", "/articles/a_1", "/newsletters/nl_1/exports", "/subscribers/s_1",
  "/newsletters/%2e%2e/settings", "/newsletters/nl_1/../x", "//x", "/a%zz", "/newsletters/nl_1/articles?%zz=1", "/x#frag?y",
  "/newsletters/__proto__/settings", "/newsletters/constructor/subscribers", "/newsletters/nl_1/articles?__proto__=x&constructor=y",
  "/newsletters/nl_1/articles?status[]=draft&status[]=sent", "/newsletters/nl_1/articles?expand[0]=stats", "",
];
const METHODS = ["GET", "POST", "PATCH", "DELETE", "PUT", "HEAD", "get", "Post", "OPTIONS", "G3T", "", "X".repeat(17)];
const NAMES = ["status", "tag", "expand", "limit", "__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "status[]", "expand[0]", "x"];
const VALUES = ["draft", "sent", "stats", "subscribers", "100", "0", "-1", "1e3", "", " ", "a,b", "%zz", "__proto__"];
const ADDRESSES = ["a@x.io", "b@x.io", "a@x.io, b@x.io", "a@x.io;b@x.io", "a @x.io", "a@b@x.io", "nope", "@x.io", "a@", "", "ä@ü.de"];

function thrower(): never {
  throw new Error("hostile");
}

/** A Proxy over `target` that is transparent, throws from every trap, lies in `get`, or is revoked. */
function proxied<T extends object>(target: T, mode: number): T {
  if (mode === 0) return new Proxy(target, {});
  if (mode === 1) return new Proxy(target, { get: thrower, getOwnPropertyDescriptor: thrower, ownKeys: thrower, has: thrower, getPrototypeOf: thrower });
  if (mode === 2) return new Proxy(target, { get: () => "lie" });
  const { proxy, revoke } = Proxy.revocable(target, {});
  revoke();
  return proxy;
}

/** One descriptor from a PRNG. */
export function hostileDescriptor(random: () => number): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const chance = (p: number) => random() < p;

  const list = (items: readonly string[]): unknown => {
    const r = random();
    if (r < 0.6) return Array.from({ length: Math.floor(random() * 7) }, () => pick(items));
    if (r < 0.65) return new Array(Math.floor(random() * 6));
    // eslint-disable-next-line no-sparse-arrays
    if (r < 0.7) return [, pick(items)];
    if (r < 0.75) return [pick(items), 5, null];
    if (r < 0.78) return BIG_LIST;
    if (r < 0.85) return proxied([pick(items)], Math.floor(random() * 4));
    if (r < 0.9) {
      const a = [pick(items)];
      Object.defineProperty(a, 0, { get: thrower });
      return a;
    }
    if (r < 0.95) return pick(items);
    return { 0: pick(items), length: 1 };
  };

  const query = (): unknown => {
    const r = random();
    if (r < 0.5) return undefined;
    // a 100 000-key object costs every reader one native listing of its keys (~50 ms): rare, so a million runs fit in minutes
    if (r < 0.5005) return BIG_KEYS;
    if (r < 0.6) return pick(["status=draft", 42, null, ["status"]]);
    const q: Record<string, unknown> = chance(0.2) ? Object.create(null) : chance(0.1) ? Object.create({ status: "draft" }) : {};
    const n = Math.floor(random() * 4);
    for (let i = 0; i < n; i++) {
      const name = pick(NAMES);
      const value = chance(0.6) ? pick(VALUES) : chance(0.5) ? list(VALUES) : chance(0.5) ? HUGE : { toString: thrower };
      if (chance(0.05)) Object.defineProperty(q, name, { enumerable: true, configurable: true, get: thrower });
      else Object.defineProperty(q, name, { enumerable: true, writable: true, configurable: true, value });
    }
    return chance(0.1) ? proxied(q, Math.floor(random() * 4)) : q;
  };

  const body = (): unknown => {
    const r = random();
    if (r < 0.3) return undefined;
    if (r < 0.35) return pick([null, "to", 5, []]);
    const b: Record<string, unknown> = {};
    if (chance(0.7)) b.to = list(ADDRESSES);
    if (chance(0.4)) b.subscribers = chance(0.1) ? Array.from({ length: 501 }, (_, i) => `s${i}`) : list(["s_1", "s_2", "", "s".repeat(300)]);
    if (chance(0.05)) Object.defineProperty(b, "to", { enumerable: true, configurable: true, get: thrower });
    if (chance(0.05)) Object.defineProperty(b, "__proto__", { enumerable: true, configurable: true, value: { to: ["a@x.io"] } });
    return chance(0.1) ? proxied(b, Math.floor(random() * 4)) : b;
  };

  const r = random();
  if (r < 0.02) return pick([undefined, null, 0, "GET /me", true, Symbol("x"), () => 1, []]);
  const d: Record<string, unknown> = chance(0.05) ? Object.create(null) : {};
  const set = (name: string, value: unknown) => {
    if (chance(0.02)) Object.defineProperty(d, name, { enumerable: true, configurable: true, get: chance(0.5) ? thrower : () => value });
    else Object.defineProperty(d, name, { enumerable: true, writable: true, configurable: true, value });
  };
  set("method", chance(0.9) ? pick(METHODS) : pick([HUGE, 5, null, undefined, { toString: () => "GET" }]));
  const path = chance(0.93) ? pick(PATHS) : pick([HUGE, "/" + HUGE, 7, null, ["/me"], "/me?" + Array.from({ length: 150 }, (_, i) => `p${i}=1`).join("&")]);
  set("path", path);
  const q = query();
  if (q !== undefined) set("query", q);
  if (chance(0.4)) set("idempotencyKey", chance(0.9) ? pick(["k1", "k2", "k3", "", " sp ", "ключ"]) : pick([HUGE, 5, ["k1"]]));
  const b = body();
  if (b !== undefined) set("body", b);
  if (chance(0.3)) set("newsletter", chance(0.9) ? pick(["nl_1", "nl_2", "", "__proto__", "constructor"]) : pick([HUGE, 5, null]));
  if (chance(0.2)) set("requestId", chance(0.8) ? pick(["r1", "req_r2", "bad id", ""]) : pick([HUGE, 5]));
  if (chance(0.03)) Object.setPrototypeOf(d, { method: "GET", path: "/me" });
  return chance(0.05) ? proxied(d, Math.floor(random() * 4)) : d;
}

/** The descriptor at `index` of the stream for `seed` (to replay one failure). */
export function descriptorAt(seed: number, index: number): unknown {
  const random = rng(seed);
  let d: unknown;
  for (let i = 0; i <= index; i++) d = hostileDescriptor(random);
  return d;
}
