/**
 * newsletter-policy/testing: a fast-check and vitest kit for hosts and store authors.
 *
 * - `describeStoreConformance(name, makeStore)`: the suite any `PolicyStore` runs to prove it
 *   behaves like `MemoryStore`.
 * - Arbitraries of credentials, roles, configs, requests (well-formed and untrusted) and whole
 *   traces, and runners that replay a trace through `evaluate` or through `createPolicy`.
 *
 * fast-check and vitest are optional peer dependencies: install them to use this entry point.
 */
export { describeStoreConformance, comparableOutcome, comparableDecision } from "./conformance.js";
export {
  arbConfig,
  arbCredential,
  arbFamily,
  arbGrants,
  arbLevel,
  arbRequest,
  arbRoleName,
  arbRoles,
  arbTrace,
  arbUntrustedRequest,
  EXTRA_OPERATIONS,
  NEWSLETTER_IDS,
  PROTOTYPE_NAMES,
  ROLE_NAMES,
} from "./arbitraries.js";
export { runPolicyTrace, runPureTrace } from "./trace.js";

export type { StoreConformanceOptions, StoreFactory, ComparableOutcome } from "./conformance.js";
export type {
  ConfigArbitraryOptions,
  CredentialArbitraryOptions,
  GeneratedRequest,
  RequestArbitraryOptions,
  Trace,
  TraceArbitraryOptions,
  TraceStep,
} from "./arbitraries.js";
export type { RunTraceOptions, TraceEntry } from "./trace.js";
