// Proves verifyOutputs catches outputs that differ from the inputs in ways row counts cannot see:
// one changed value, a value swapped between two rows, a dropped row, and changed key-value metadata;
// and that it fetches each output's footer once, the worker's reader included.

import { describe, expect, it } from 'vitest';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { problemsOf, rewritten, tamper } from '../../../support/verify-fixtures.js';

describe('verifyOutputs', () => {
  it('passes untouched outputs and reports the recomputed fingerprint', async () => {
    // Prepare
    const { target, result } = await rewritten();

    // Act
    const report = await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(report.rows).toBe(2_000);
    expect(report.fingerprint.hash).toBe(result.fingerprint.hash);
  });

  it('catches one changed value even though rows, nulls and schema match', async () => {
    // Prepare
    const { target, result } = await rewritten();
    const out = result.outputs[0] as { key: string };
    const tampered = await tamper(target, out.key, (c) => {
      const ids = c.user_id as bigint[];
      ids[17] = (ids[17] as bigint) + 1n;
    });

    // Act
    const problems = await problemsOf(verifyOutputs(target, [tampered], result.fingerprint));

    // Assess
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^row hash/);
  });

  it('catches two rows swapping a value, which keeps every column multiset intact', async () => {
    // Prepare
    const { target, result } = await rewritten();
    const out = result.outputs[0] as { key: string };
    const tampered = await tamper(target, out.key, (c) => {
      const ids = c.user_id as bigint[];
      const j = ids.findIndex((v) => v !== ids[0]);
      [ids[0], ids[j]] = [ids[j] as bigint, ids[0] as bigint];
    });

    // Act
    const problems = await problemsOf(verifyOutputs(target, [tampered], result.fingerprint));

    // Assess
    expect(problems).toEqual([expect.stringMatching(/^row hash/)]);
  });

  it('catches a dropped row and changed key-value metadata', async () => {
    // Prepare
    const { target, result } = await rewritten();
    const out = result.outputs[0] as { key: string };
    const tampered = await tamper(
      target,
      out.key,
      (c) => {
        for (const v of Object.values(c)) v.pop();
      },
      new Map([['writer', 'someone else']]),
    );

    // Act
    const problems = await problemsOf(verifyOutputs(target, [tampered], result.fingerprint));

    // Assess
    expect(problems.some((p) => p.startsWith('rows:'))).toBe(true);
    expect(problems.some((p) => p.startsWith('schema:'))).toBe(true);
    expect(problems.some((p) => p.startsWith('row hash'))).toBe(true);
  });

  it("fetches each output's footer once: the worker's reader gets the bytes the main thread read", async () => {
    // Prepare: a store that records every ranged read.
    const { target, result } = await rewritten(2);
    const reads: { key: string; start: number; end: number }[] = [];
    const getRange = target.getRange.bind(target);
    target.getRange = async (key, start, end) => {
      reads.push({ key, start, end });
      return getRange(key, start, end);
    };

    // Act
    const report = await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess: per output, one read reaches the end of the object (the footer), and data reads follow.
    expect(report.fingerprint.hash).toBe(result.fingerprint.hash);
    for (const output of result.outputs) {
      const mine = reads.filter((r) => r.key === output.key);
      expect(mine.filter((r) => r.end === output.size - 1)).toHaveLength(1);
      expect(mine.length).toBeGreaterThan(1);
    }
  });
});
