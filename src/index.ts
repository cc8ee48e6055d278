/**
 * newsletter-policy: for each request of a newsletter API, may it go on; which budgets and daily
 * caps it charges; and, when refused, the exact status, error body and rate-limit headers.
 */
export { evaluate, release } from "./evaluate.js";
export { emptyUsage } from "./snapshot.js";
export { prune } from "./prune.js";
export { createPolicy } from "./policy.js";
export { reset } from "./reset.js";
export { MemoryStore } from "./memory-store.js";
export { defineConfig } from "./config.js";
export { credentialFromScopes } from "./oauth.js";
export { PolicyConfigError } from "./errors.js";
export { defaultOperations } from "./catalogue.js";
export { permitted } from "./permitted.js";

export type { PolicyState } from "./evaluate.js";
export type { Usage } from "./snapshot.js";
export type { Policy, CreatePolicyOptions, StatusOptions } from "./policy-types.js";
export type { ResourceTarget } from "./adapters/core.js";
export type { Limits } from "./types.js";
export type { Insurance } from "./insurance.js";
export type { ResetTarget } from "./reset.js";
export type { ResetRequest, ResetCap } from "./store.js";
export type { MemoryStoreOptions } from "./memory-store.js";
export type { PolicyConfig } from "./config.js";
export type { PolicyOptions, PolicyWarning, BudgetSpec } from "./config-types.js";
export type { BudgetOptions } from "./types.js";
export type { ScopeGrant } from "./oauth.js";
export type { OperationSpec, FilterRule, ListField, Method } from "./catalogue.js";
export type { Permissions, PermittedOperation, PermittedRefusal, FilterValues } from "./permitted.js";
export type {
  PolicyStore,
  ChargeRequest,
  ChargeOutcome,
  BudgetCharge,
  CapCharge,
  WindowReading,
  RecordTicket,
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
  ErrorCode,
  RefusalStatus,
  BudgetFigures,
  BudgetReport,
  RateLimitStatus,
  Reason,
  NoReplay,
  Charged,
  ReleaseTicket,
  Decision,
  AllowedDecision,
  RefusedDecision,
} from "./types.js";
