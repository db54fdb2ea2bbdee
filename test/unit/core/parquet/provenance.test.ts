// Proves the provenance arithmetic: stretches cut into outputs at their quotas give each output's sources,
// and an input's pieces are found back from them only when they account for every one of its rows once.

import { describe, expect, it } from 'vitest';
import {
  indexPieces,
  locateRows,
  ProvenanceMismatchError,
  piecesIn,
  type RowSource,
} from '../../../../functions/core/parquet/provenance.js';

/** One input's pieces, indexing the outputs first: what the commit's undo does per input. */
function piecesOf(
  outputs: readonly { readonly rows: number; readonly sources?: readonly RowSource[] | undefined }[],
  key: string,
  rows: number,
) {
  const indexed = indexPieces(outputs);
  return 'problem' in indexed ? indexed : piecesIn(indexed.index, key, rows);
}

describe('locateRows', () => {
  it('cuts a stretch at its quotas, an input across two outputs and an output across inputs', () => {
    // Prepare
    const stretch = {
      inputs: [
        { key: 'a', rows: 5 },
        { key: 'b', rows: 7 },
        { key: 'c', rows: 2 },
      ],
      outputRows: [3, 6, 5],
    };

    // Act
    const outputs = locateRows([stretch]);

    // Assess
    expect(outputs).toEqual([
      [{ key: 'a', firstRow: 0, rows: 3 }],
      [
        { key: 'a', firstRow: 3, rows: 2 },
        { key: 'b', firstRow: 0, rows: 4 },
      ],
      [
        { key: 'b', firstRow: 4, rows: 3 },
        { key: 'c', firstRow: 0, rows: 2 },
      ],
    ]);
  });

  it('never lets an output span two stretches', () => {
    // Act
    const outputs = locateRows([
      { inputs: [{ key: 'a', rows: 4 }], outputRows: [4] },
      {
        inputs: [
          { key: 'b', rows: 1 },
          { key: 'c', rows: 1 },
        ],
        outputRows: [2],
      },
    ]);

    // Assess
    expect(outputs).toEqual([
      [{ key: 'a', firstRow: 0, rows: 4 }],
      [
        { key: 'b', firstRow: 0, rows: 1 },
        { key: 'c', firstRow: 0, rows: 1 },
      ],
    ]);
  });

  it('refuses a stretch whose outputs hold other than its inputs’ rows', () => {
    // Act / Assess
    expect(() => locateRows([{ inputs: [{ key: 'a', rows: 4 }], outputRows: [3] }])).toThrow(
      ProvenanceMismatchError,
    );
  });
});

describe('piecesOf', () => {
  const sources: RowSource[][] = [
    [
      { key: 'a', firstRow: 0, rows: 3 },
      { key: 'b', firstRow: 0, rows: 2 },
    ],
    [
      { key: 'b', firstRow: 2, rows: 4 },
      { key: 'c', firstRow: 0, rows: 1 },
    ],
  ];
  const outputs = [
    { rows: 5, sources: sources[0] },
    { rows: 5, sources: sources[1] },
  ];

  it('finds an input split across outputs, with its offset in each output', () => {
    // Act
    const found = piecesOf(outputs, 'b', 6);

    // Assess
    expect(found).toEqual({
      pieces: [
        { output: 0, offset: 3, firstRow: 0, rows: 2 },
        { output: 1, offset: 0, firstRow: 2, rows: 4 },
      ],
    });
  });

  it('refuses when the outputs hold fewer rows of the input than it had', () => {
    // Act
    const found = piecesOf(outputs, 'b', 7);

    // Assess
    expect(found).toEqual({ problem: 'the outputs hold 6 rows of b, it had 7' });
  });

  it('refuses a piece that is missing or repeated', () => {
    // Prepare
    const gap = [{ rows: 3, sources: [{ key: 'x', firstRow: 1, rows: 3 }] }];
    const twice = [
      { rows: 2, sources: [{ key: 'x', firstRow: 0, rows: 2 }] },
      { rows: 2, sources: [{ key: 'x', firstRow: 0, rows: 2 }] },
    ];

    // Act / Assess
    expect(piecesOf(gap, 'x', 4)).toHaveProperty('problem');
    expect(piecesOf(twice, 'x', 4)).toHaveProperty('problem');
  });

  it('refuses outputs whose sources are not recorded or do not add up to the output', () => {
    // Act / Assess
    expect(piecesOf([{ rows: 2 }], 'x', 2)).toEqual({ problem: 'output 0 records no sources' });
    expect(piecesOf([{ rows: 3, sources: [{ key: 'x', firstRow: 0, rows: 2 }] }], 'x', 2)).toHaveProperty(
      'problem',
    );
  });

  it('indexes every input once, so each input is found without another pass over the outputs', () => {
    // Act
    const indexed = indexPieces(outputs);

    // Assess
    if ('problem' in indexed) throw new Error(indexed.problem);
    expect([...indexed.index.keys()]).toEqual(['a', 'b', 'c']);
    expect(piecesIn(indexed.index, 'a', 3)).toEqual({
      pieces: [{ output: 0, offset: 0, firstRow: 0, rows: 3 }],
    });
    expect(piecesIn(indexed.index, 'c', 1)).toEqual({
      pieces: [{ output: 1, offset: 4, firstRow: 0, rows: 1 }],
    });
    expect(piecesIn(indexed.index, 'unknown', 2)).toHaveProperty('problem');
  });
});
