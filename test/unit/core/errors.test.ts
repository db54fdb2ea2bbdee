// The error classes' retry flags: every class of core/errors.ts is in ERROR_CLASSES (from which the state
// machine's Retry lists are computed), and an error carries its class's flag.
import { describe, expect, it } from 'vitest';
import * as errors from '../../../functions/core/errors.js';
import {
  CompactorError,
  ERROR_CLASSES,
  JournalConflictError,
  PERMANENT_ERROR_NAMES,
  RETRYABLE_ERROR_NAMES,
  TransientStoreError,
  UsageError,
  VerificationError,
} from '../../../functions/core/errors.js';

describe('error classes', () => {
  it('lists every error class the module exports, so none escapes the computed Retry list', () => {
    // Prepare
    const exported = Object.values(errors).filter(
      (value): value is typeof CompactorError =>
        typeof value === 'function' && value.prototype instanceof CompactorError,
    );

    // Act
    const listed = new Set<unknown>(ERROR_CLASSES);

    // Assess
    expect(exported.filter((c) => !listed.has(c)).map((c) => c.name)).toEqual([]);
    expect(ERROR_CLASSES).toHaveLength(exported.length);
  });

  it('splits the classes into retryable and permanent names by their flag, in file order', () => {
    // Prepare / Act: computed when the module loads

    // Assess
    expect(RETRYABLE_ERROR_NAMES).toEqual(['TransientStoreError', 'JournalConflictError']);
    expect(PERMANENT_ERROR_NAMES).toContain('VerificationError');
    expect(PERMANENT_ERROR_NAMES).toContain('UsageError');
    expect([...RETRYABLE_ERROR_NAMES, ...PERMANENT_ERROR_NAMES].sort()).toEqual(
      ERROR_CLASSES.map((c) => c.name).sort(),
    );
  });

  it('gives each error its class flag, inherited by subclasses', () => {
    // Prepare / Act
    const transient = new TransientStoreError('throttled');
    const conflict = new JournalConflictError('lost a race');
    const verification = new VerificationError('rows differ');
    const usage = new UsageError('bad flag');

    // Assess
    expect([transient.retryable, conflict.retryable]).toEqual([true, true]);
    expect([verification.retryable, usage.retryable, UsageError.retryable]).toEqual([false, false, false]);
    expect(transient.name).toBe('TransientStoreError');
  });
});
