/**
 * newsletter-policy/testing: a fast-check and vitest kit for hosts and store authors.
 *
 * - `describeStoreConformance(name, makeStore)`: the suite any `PolicyStore` runs to prove it
 *   behaves like `MemoryStore`.
 * - Arbitraries of credentials, roles, configs, requests (well-formed and untrusted) and whole
 *   traces, and runners that replay a trace through `evaluate` or through `createPolicy`.
 *
 * fast-check and vitest are optional peer dependencies: fast-check for everything here, vitest for
 * `describeStoreConformance` only (it declares vitest tests). Without vitest the entry still loads,
 * so hosts on node:test, jest or mocha use the arbitraries and trace runners with fast-check alone.
 */
export { describeStoreConformance, comparableOutcome, comparableDecision } from "./conformance.js";
export { arbConfig } from "./arbitraries/config.js";
export { arbCredential, arbFamily, arbGrants, arbLevel, arbRoleName, arbRoles } from "./arbitraries/credentials.js";
export { arbRequest } from "./arbitraries/requests.js";
export { arbTrace } from "./arbitraries/traces.js";
export { arbUntrustedRequest } from "./arbitraries/untrusted.js";
export { EXTRA_OPERATIONS, NEWSLETTER_IDS, PROTOTYPE_NAMES, ROLE_NAMES } from "./arbitraries/vocabulary.js";
export { runPolicyTrace, runPureTrace } from "./run-trace.js";

export type { StoreConformanceOptions, StoreFactory, ComparableOutcome } from "./conformance.js";
export type { ConfigArbitraryOptions } from "./arbitraries/config.js";
export type { CredentialArbitraryOptions } from "./arbitraries/credentials.js";
export type { GeneratedRequest, RequestArbitraryOptions } from "./arbitraries/requests.js";
export type { Trace, TraceArbitraryOptions, TraceStep } from "./arbitraries/traces.js";
export type { RunTraceOptions, TraceEntry } from "./run-trace.js";
