/** The two ways through, as one driver each: `evaluate` over a snapshot, and `createPolicy` over a MemoryStore. */
import { createPolicy, emptyUsage, evaluate, MemoryStore, release, type Credential, type Decision, type PolicyConfig, type PolicyOptions, type PolicyRequest, type Roles, type Usage } from "../../src/index.js";

export interface Driver {
  readonly name: string;
  check(request: unknown, now: number): Promise<Decision>;
  release(decision: Decision, now: number): Promise<void>;
}

export function pureDriver(credential: Credential, roles: Roles, config?: PolicyConfig | PolicyOptions): Driver & { usage: Usage } {
  const driver = {
    name: "evaluate",
    usage: emptyUsage(),
    async check(request: unknown, now: number) {
      const result = evaluate(request as PolicyRequest, { credential, roles, usage: driver.usage, now, ...(config && { config }) });
      driver.usage = result.usage;
      return result.decision;
    },
    async release(decision: Decision, now: number) {
      driver.usage = release(driver.usage, decision, now);
    },
  };
  return driver;
}

export function storeDriver(credential: Credential, roles: Roles, store = new MemoryStore(), config?: PolicyConfig | PolicyOptions): Driver & { store: MemoryStore } {
  let clock = 0;
  const policy = createPolicy({ store, clock: () => clock, ...(config && { config }) });
  return {
    name: "MemoryStore",
    store,
    async check(request, now) {
      clock = now;
      return policy.check(request as PolicyRequest, { credential, roles });
    },
    async release(decision, now) {
      clock = now;
      await policy.release(decision);
    },
  };
}

/** Both drivers, as factories (a fresh one per test), for one credential. */
export function drivers(credential: Credential, roles: Roles, config?: PolicyConfig | PolicyOptions): Array<{ name: string; make: () => Driver }> {
  return [
    { name: "evaluate", make: () => pureDriver(credential, roles, config) },
    { name: "MemoryStore", make: () => storeDriver(credential, roles, new MemoryStore(), config) },
  ];
}
