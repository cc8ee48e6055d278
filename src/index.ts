/**
 * newsletter-policy: for each request of a newsletter API, may it go on; which budgets and daily
 * caps it charges; and, when refused, the exact status, error body and rate-limit headers.
 */
export { evaluate, release, emptyUsage, prune } from "./evaluate.js";
export { createPolicy } from "./policy.js";
export { MemoryStore } from "./memory-store.js";
export { defineConfig } from "./config.js";
export { credentialFromScopes } from "./oauth.js";
export { PolicyConfigError } from "./errors.js";
export { defaultOperations } from "./catalogue.js";

export type { Usage, PolicyState, Buckets, CapRecord, CapDay, SnapshotWindow } from "./evaluate.js";
export type { Policy, CreatePolicyOptions } from "./policy.js";
export type { MemoryStoreOptions } from "./memory-store.js";
export type { PolicyConfig, PolicyOptions, BudgetOptions, BudgetSpec } from "./config.js";
export type { ScopeGrant } from "./oauth.js";
export type { OperationSpec, FilterRule, ListField, Method } from "./catalogue.js";
export type {
  PolicyStore,
  ChargeRequest,
  ChargeOutcome,
  BudgetCharge,
  CapCharge,
  WindowReading,
  KeyRecord,
  WindowRecord,
} from "./store.js";
export type {
  Family,
  Level,
  GrantedLevel,
  Permission,
  Requirement,
  BuiltInBudget,
  CapName,
  Grants,
  Credential,
  Roles,
  Who,
  PolicyRequest,
  ErrorObject,
  BudgetFigures,
  BudgetReport,
  RateLimitStatus,
  Reason,
  Charged,
  ReleaseTicket,
  Decision,
  AllowedDecision,
  RefusedDecision,
} from "./types.js";
