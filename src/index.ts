/**
 * newsletter-policy: for each request of a newsletter API, may it go on; which budgets and daily
 * caps it charges; and, when refused, the exact status, error body and rate-limit headers.
 */
export { evaluate, release, emptyUsage, prune } from "./evaluate.js";
export { createPolicy } from "./policy.js";
export { reset } from "./reset.js";
export { MemoryStore } from "./memory-store.js";
export { defineConfig } from "./config.js";
export { credentialFromScopes } from "./oauth.js";
export { PolicyConfigError } from "./errors.js";
export { defaultOperations } from "./catalogue.js";
export { permitted } from "./permitted.js";

export type { Usage, PolicyState } from "./evaluate.js";
export type { Policy, CreatePolicyOptions, StatusOptions } from "./policy.js";
export type { Limits } from "./limits.js";
export type { Insurance } from "./insurance.js";
export type { ResetTarget, ResetRequest, ResetCap } from "./reset.js";
export type { MemoryStoreOptions } from "./memory-store.js";
export type { PolicyConfig, PolicyOptions, PolicyWarning, BudgetOptions, BudgetSpec } from "./config.js";
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
  Charged,
  ReleaseTicket,
  Decision,
  AllowedDecision,
  RefusedDecision,
} from "./types.js";
