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
      const reported = onError?.(error);
      // an async reporter that rejects is dropped too: left unhandled, it would end the process
      if (isThenable(reported)) reported.then(undefined, ignore);
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

function ignore(): void {}

/**
 * What a hook is shown of a decision: a copy, frozen through. The decision itself is the caller's
 * answer (and the adapters act on it after telling the hook): a hook that set `allowed`, changed a
 * status or a header, or dropped the release ticket would change what the request is answered, or
 * whether a failed send can be uncounted. Writing to the copy throws in strict mode (told to
 * `onHookError`) and changes nothing.
 */
export function shownToHook<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return Object.freeze(value.map(shownToHook)) as T;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) copy[key] = shownToHook((value as Record<string, unknown>)[key]);
  return Object.freeze(copy) as T;
}

/** The hooks of a policy's options. */
export function hooksOf({ onDecision, onStoreError, onHookError }: Pick<CreatePolicyOptions, "onDecision" | "onStoreError" | "onHookError">): Hooks {
  const hook = (run: () => unknown, decision: Decision): void => callHook(run, onHookError === undefined ? undefined : (error) => onHookError(error, decision));

  return {
    decided(decision) {
      if (onDecision !== undefined) {
        const shown = shownToHook(decision);
        hook(() => onDecision(shown), shown);
      }
      return decision;
    },
    storeFailed(error, decision) {
      if (onStoreError !== undefined) {
        const shown = shownToHook(decision);
        hook(() => onStoreError(error, shown), shown);
      }
    },
  };
}
