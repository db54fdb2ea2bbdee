// Typed errors of the local cloud harness: each says which resource or template construct was at
// fault and what to change (the stack, the harness options, or the test) to get past it.
import { CompactorError } from '../../functions/core/errors.js';

/** The harness cannot do what was asked: unsupported template shape, unknown resource, bad state. */
export class LocalCloudError extends CompactorError {}

/** A child process or server of the harness did not start (or stop) in time. */
export class LocalCloudStartupError extends CompactorError {}
