/**
 * The host's hooks (`onDecision`, `onStoreError`, `onHookError`), called so that none of them can
 * break the request it is told of.
 */
import type { CreatePolicyOptions } from "./policy-types.js";
import { isThenable } from "./thenable.js";
import type { Decision } from "./types.js";

/** Tells the host of decisions and store failures; what a hook throws or rejects with goes to `onHookError`. */
export interface Hooks {
  /** Tells `onDecision`; returns the decision. */
  decided(decision: Decision): Decision;
  /** Tells `onStoreError`. */
  storeFailed(error: unknown, decision: Decision): void;
}

/**
 * Runs a host hook so that it cannot break the request it is told of: a throw, or the rejection of
 * what it returns, goes to `onError`; if that throws too, there is nothing more to tell. Used by
 * `createPolicy`'s hooks and by the adapters' `onDecision`.
 */
export function callHook(run: () => unknown, onError: ((error: unknown) => void) | undefined): void {
  const report = (error: unknown): void => {
    try {
      onError?.(error);
    } catch {
      // dropped: a hook never breaks a request
    }
  };
  try {
    const result = run();
    if (isThenable(result)) result.then(undefined, report);
  } catch (error) {
    report(error);
  }
}

/** The hooks of a policy's options. */
export function hooksOf({ onDecision, onStoreError, onHookError }: Pick<CreatePolicyOptions, "onDecision" | "onStoreError" | "onHookError">): Hooks {
  const hook = (run: () => unknown, decision: Decision): void => callHook(run, onHookError === undefined ? undefined : (error) => onHookError(error, decision));

  return {
    decided(decision) {
      if (onDecision !== undefined) hook(() => onDecision(decision), decision);
      return decision;
    },
    storeFailed(error, decision) {
      if (onStoreError !== undefined) hook(() => onStoreError(error, decision), decision);
    },
  };
}
