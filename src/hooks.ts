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

/** The hooks of a policy's options. */
export function hooksOf({ onDecision, onStoreError, onHookError }: Pick<CreatePolicyOptions, "onDecision" | "onStoreError" | "onHookError">): Hooks {
  /** Tells the host's error hook; if that throws too, there is nothing more to tell. */
  function report(error: unknown, decision: Decision): void {
    try {
      onHookError?.(error, decision);
    } catch {
      // dropped: a hook never breaks a request
    }
  }

  /** A host hook must not break the request it is told of: a throw or a rejection goes to onHookError. */
  function hook(run: () => unknown, decision: Decision): void {
    try {
      const result = run();
      if (isThenable(result)) result.then(undefined, (error: unknown) => report(error, decision));
    } catch (error) {
      report(error, decision);
    }
  }

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
