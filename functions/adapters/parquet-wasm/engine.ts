// The parquet-wasm ParquetEngine (parquet-rs compiled to wasm, hyparquet for footers): one object that
// binds the port to this engine's rewrite, its independent re-read of the outputs, and its footer reader.
import { readFooter } from '../../core/parquet/footer.js';
import type { ParquetEngine } from '../../ports/parquet-engine.js';
import { rewriteGroup } from './rewrite.js';
import { verifyOutputs } from './verify.js';

/**
 * The engine the project deploys (chosen in functions/shared/parquet-engine.ts).
 *
 * Why an adapter although it does no I/O (every byte goes through the ObjectStore it is handed): core is
 * the logic that decides — plan, the fingerprint's rule, the commit protocol — and is the same whatever
 * runs it. This engine is bound to a runtime instead: a wasm module loaded once per thread, whose heap
 * never shrinks and stops at 4 GB; worker threads with their own bundle (`worker.js` beside the handler);
 * parquet-rs's traps and silent drops, guarded here. It is what would be swapped (DuckDB, a native engine,
 * a fake in tests), and it drags the wasm binary into every bundle that imports it — so core sees only the
 * port, and handlers that never rewrite never load it.
 *
 * Footers are parsed by core/parquet/footer.ts (pure, engine-independent: planning reads them without an
 * engine) and handed out here as the engine's own, so a caller that holds an engine needs nothing else.
 */
export const parquetWasmEngine: ParquetEngine = {
  name: 'parquet-wasm',
  rewriteGroup,
  verifyOutputs,
  readFooter,
};
