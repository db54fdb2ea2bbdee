// Where each input's rows went in a rewrite that keeps row order: per output, its sources in order as
// (input key, first row within the input, rows), and back from an input to the output rows holding it.
import { CompactorError } from '../errors.js';

/**
 * A contiguous piece of one input's rows as it lies in an output: rows `firstRow .. firstRow + rows` of the
 * input (0-based, counted in the rows the rewrite kept of it), in that order.
 */
export interface RowSource {
  readonly key: string;
  readonly firstRow: number;
  readonly rows: number;
}

/**
 * One stretch of a rewrite's row stream: consecutive inputs, whole and in order, cut into consecutive outputs
 * of `outputRows` rows each (a schema run and its quotas, or one stitched output and its whole inputs).
 */
export interface RowStretch {
  readonly inputs: readonly { readonly key: string; readonly rows: number }[];
  readonly outputRows: readonly number[];
}

/** The stretches do not describe whole outputs: their inputs' rows and their outputs' rows differ. */
export class ProvenanceMismatchError extends CompactorError {}

/**
 * The sources of every output, in output order, from the stretches the rewrite wrote one after another.
 * Why derive rather than observe: the decoder packs neighbouring small inputs into one batch, so the
 * writer never learns which input a row came from — but within a stretch rows keep input order, and the
 * cuts are the very quotas the writer rolled over at, so the sources are exact.
 * @throws ProvenanceMismatchError when a stretch's inputs and outputs hold different row counts.
 */
export function locateRows(stretches: readonly RowStretch[]): RowSource[][] {
  const outputs: RowSource[][] = [];
  for (const stretch of stretches) {
    const inputRows = stretch.inputs.reduce((n, i) => n + i.rows, 0);
    const outputRows = stretch.outputRows.reduce((n, r) => n + r, 0);
    if (inputRows !== outputRows) {
      throw new ProvenanceMismatchError(
        `a stretch of ${stretch.inputs.length} input(s) holds ${inputRows} rows, its ${stretch.outputRows.length} output(s) ${outputRows}`,
      );
    }
    let input = 0;
    let used = 0; // rows of stretch.inputs[input] already placed
    for (const quota of stretch.outputRows) {
      const sources: RowSource[] = [];
      let left = quota;
      while (left > 0) {
        const current = stretch.inputs[input] as { key: string; rows: number };
        const take = Math.min(left, current.rows - used);
        if (take > 0) sources.push({ key: current.key, firstRow: used, rows: take });
        used += take;
        left -= take;
        if (used === current.rows) {
          input += 1;
          used = 0;
        }
      }
      outputs.push(sources);
    }
  }
  return outputs;
}

/** Rows `offset .. offset + rows` of one output, holding rows `firstRow .. firstRow + rows` of an input. */
export interface InputPiece {
  /** Index of the output (in the order given). */
  readonly output: number;
  /** First row of the piece within the output. */
  readonly offset: number;
  /** First row of the piece within the input. */
  readonly firstRow: number;
  readonly rows: number;
}

/** Every input's pieces in the outputs, by input key, in output order: built once, looked up per input. */
export type PieceIndex = ReadonlyMap<string, readonly InputPiece[]>;

/**
 * Indexes the outputs' sources by input (one pass, so checking n inputs costs O(sources), not O(n · sources)),
 * or says why it cannot: an output that records no sources, or whose sources do not add up to its rows.
 */
export function indexPieces(
  outputs: readonly { readonly rows: number; readonly sources?: readonly RowSource[] | undefined }[],
): { readonly index: PieceIndex } | { readonly problem: string } {
  const index = new Map<string, InputPiece[]>();
  for (const [output, o] of outputs.entries()) {
    if (o.sources === undefined) return { problem: `output ${output} records no sources` };
    let offset = 0;
    for (const source of o.sources) {
      const piece = { output, offset, firstRow: source.firstRow, rows: source.rows };
      const pieces = index.get(source.key);
      if (pieces === undefined) index.set(source.key, [piece]);
      else pieces.push(piece);
      offset += source.rows;
    }
    if (offset !== o.rows) {
      return { problem: `the sources of output ${output} hold ${offset} rows, the output ${o.rows}` };
    }
  }
  return { index };
}

/**
 * Where `key`'s rows lie in the indexed outputs, in input order — or, when they do not make up rows 0 ..
 * `rows` of the input exactly once, why not (a piece missing, repeated or out of bounds). What an undo
 * re-creates an input from, so it must account for every row.
 */
export function piecesIn(
  index: PieceIndex,
  key: string,
  rows: number,
): { readonly pieces: InputPiece[] } | { readonly problem: string } {
  const pieces = [...(index.get(key) ?? [])].sort((a, b) => a.firstRow - b.firstRow);
  let next = 0;
  for (const piece of pieces) {
    if (piece.firstRow !== next) {
      return { problem: `rows ${next} .. ${piece.firstRow} of ${key} are in no output, or twice` };
    }
    next += piece.rows;
  }
  if (next !== rows) return { problem: `the outputs hold ${next} rows of ${key}, it had ${rows}` };
  return { pieces };
}
