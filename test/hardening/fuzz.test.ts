/**
 * Issue 8: the fuzz run. Descriptors, plain and hostile (test/hardening/hostile.ts), through
 * `evaluate` and `check` with the same inputs: no throw, the same decision (request ids aside), and
 * `Object.prototype` untouched. CI runs a few thousand; `npm run test:deep` (NP_DEEP=1) a million
 * or NP_FUZZ of them. A failure names the seed and index: `descriptorAt(seed, index)` rebuilds it.
 */
import { describe, expect, it } from "vitest";
import { createPolicy, emptyUsage, evaluate, MemoryStore, type Credential, type Decision, type PolicyRequest, type Usage } from "../../src/index.js";
import { DEEP, SEED } from "../properties/settings.js";
import { hostileDescriptor, rng } from "./hostile.js";

const COUNT = Number(process.env.NP_FUZZ ?? (DEEP ? 1_000_000 : 4_000));
const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);

const credentials: Credential[] = [
  { id: "key_1", kind: "api_key", newsletters: { nl_1: { content: "write", audience: "write", sending: "write", settings: "write" } }, account: true },
  { id: "key_2", kind: "api_key", newsletters: { nl_1: { content: "read", audience: "read" }, nl_2: { settings: "read" } }, account: false },
  { id: "auth_1", kind: "oauth", newsletters: { nl_1: { sending: "write", content: "read" } }, account: true },
];
const roles = { nl_1: "owner", nl_2: "editor" };

function prototypeShape(): string {
  return Object.getOwnPropertyNames(Object.prototype)
    .map((name) => `${name}:${typeof Object.getOwnPropertyDescriptor(Object.prototype, name)!.value}`)
    .join(",") + `|${Object.getPrototypeOf(Object.prototype)}|${Object.isExtensible(Object.prototype)}`;
}

/** A decision without its request id and cap member id (the two APIs number them differently). */
function comparable(decision: Decision): string {
  const plain = decision.release === undefined ? decision : { ...decision, release: { ...decision.release, member: "<member>" } };
  return JSON.stringify(plain).replaceAll(decision.requestId, "<id>");
}

describe("issue 8: fuzzing both APIs with plain and hostile descriptors", () => {
  it(`${COUNT} descriptors (seed ${SEED}): no throw, evaluate and check agree, Object.prototype unchanged`, async () => {
    const before = prototypeShape();
    const random = rng(SEED);
    const policy = createPolicy({ store: new MemoryStore(), clock: () => now, generateId: () => "g" });
    let usage: Usage = emptyUsage();
    let now = T0;
    const started = performance.now();
    for (let index = 0; index < COUNT; index++) {
      const at = `seed ${SEED}, index ${index}`;
      const descriptor = hostileDescriptor(random);
      now += Math.floor(random() * 400);
      const credential = credentials[index % credentials.length]!;
      let pure: Decision;
      let checked: Decision;
      try {
        const result = evaluate(descriptor as PolicyRequest, { credential, roles, usage, now });
        usage = result.usage;
        pure = result.decision;
      } catch (error) {
        throw new Error(`evaluate threw at ${at}: ${String(error)}`);
      }
      try {
        checked = await policy.check(descriptor as PolicyRequest, { credential, roles });
      } catch (error) {
        throw new Error(`check threw at ${at}: ${String(error)}`);
      }
      if (comparable(pure) !== comparable(checked)) expect(comparable(checked), at).toBe(comparable(pure));
      // an enumerable key on Object.prototype shows in every for-in; the full shape is compared in batches
      for (const name in {}) throw new Error(`Object.prototype gained "${name}" at ${at}`);
      if (index % 10_000 === 0 && prototypeShape() !== before) throw new Error(`Object.prototype changed by ${at}`);
    }
    expect(prototypeShape()).toBe(before);
    console.log(`fuzz: ${COUNT} descriptors through evaluate and check in ${((performance.now() - started) / 1000).toFixed(1)} s (seed ${SEED})`);
  }, 3_600_000);
});
