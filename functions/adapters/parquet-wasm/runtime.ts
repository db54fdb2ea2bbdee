// Node.js runtime flags the Parquet rewrite engine is measured and deployed with: one constant, read
// by the Lambda construct (NODE_OPTIONS of the compact/verify functions) and by the benchmark's children.

/**
 * V8 flags for processes that run the rewrite engine or verification.
 *
 * `--max-semi-space-size=4` (MB): V8's young generation may otherwise grow to 16 MB per semi-space,
 * and the engine allocates little JS but many short-lived ArrayBuffers (input files, encoded output
 * chunks, verification's IPC copies) whose memory is returned only when a scavenge finds them dead.
 * A smaller young generation scavenges more often, which lowers the peak V8 heap and RSS with no
 * measurable CPU cost: this workload's JS objects are few and short-lived, so scavenges are cheap
 * (figures: docs, "Engine"). Allowed in NODE_OPTIONS.
 */
export const ENGINE_NODE_OPTIONS = '--max-semi-space-size=4';
