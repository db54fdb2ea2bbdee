// What `lake-compactor reconcile` does, loaded by reconcile.ts only when the command runs (help, --version and usage
// errors never load it, nor the Lambda SDK): invokes the deployed sweep function with the reconcile input, validated
// by the sweep's own input schema, and prints what the function returned.

import { InvokeCommand, type InvokeCommandOutput, LambdaClient } from '@aws-sdk/client-lambda';
import { CompactorError, UsageError } from '../core/errors.js';
import { type SweepInput, sweepInputSchema } from '../core/profiler/sweep-input.js';
import { clientConfigFromEnv } from '../shared/aws-env.js';

/**
 * The one call `reconcile` makes (Invoke): the SDK's LambdaClient satisfies it, and a test passes a recorded fake, as
 * no local Lambda service exists.
 */
export interface LambdaPort {
  send(command: InvokeCommand): Promise<InvokeCommandOutput>;
}

export interface ReconcileIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly aws?: { readonly lambda?: LambdaPort };
}

export interface ReconcileOptions {
  /** Only this table of the deployment; otherwise every configured table. */
  readonly table?: string;
  /** The sweep function's name (or ARN): `--sweep-function`, else the `--stack` output. */
  readonly sweepFunction?: string;
}

/**
 * The sweep function ran and failed (its handler threw, or the runtime did): the function's own error type and
 * message, so the operator reads what the sweep said (an unknown table, a table without a bucket) and not an
 * SDK wrapper's.
 */
export class SweepFunctionError extends CompactorError {
  constructor(
    readonly functionName: string,
    readonly errorType: string,
    readonly errorMessage: string,
  ) {
    super(`the sweep function ${functionName} failed: ${errorType}: ${errorMessage}`);
  }
}

/**
 * The sweep's reconcile input for `options`, checked with the sweep handler's schema, so the CLI cannot send what
 * the function would refuse.
 * @throws UsageError when the schema refuses it (an empty --table).
 */
export function reconcileInput(options: ReconcileOptions): SweepInput {
  const parsed = sweepInputSchema.safeParse({
    mode: 'reconcile',
    ...(options.table === undefined ? {} : { table: options.table }),
  });
  if (!parsed.success) {
    throw new UsageError(
      'the reconcile input is invalid',
      parsed.error.issues.map(
        (i) => `${i.path.join('.') === 'table' ? '--table' : i.path.join('.') || '(input)'}: ${i.message}`,
      ),
    );
  }
  return parsed.data;
}

/**
 * Runs `reconcile`: invokes the sweep function and waits for its answer, printed as JSON.
 * @returns the function's result (the sweep's reconcile report).
 * @throws UsageError without a function to invoke; SweepFunctionError when the function failed.
 */
export async function runReconcile(options: ReconcileOptions, io: ReconcileIo): Promise<unknown> {
  const functionName = options.sweepFunction;
  if (functionName === undefined || functionName === '') {
    throw new UsageError(
      'Name the sweep function: pass --stack <stack-name> (its SweepFunctionName output) or --sweep-function <name>',
    );
  }
  const input = reconcileInput(options);
  const client =
    io.aws?.lambda ?? new LambdaClient(clientConfigFromEnv(io.env, io.env.AWS_ENDPOINT_URL_LAMBDA));
  io.err(
    `reconcile: invoking ${functionName} with ${JSON.stringify(input)} (${input.table === undefined ? 'every table' : `table ${input.table}`}); this waits for the function`,
  );
  const answer = await client.send(
    new InvokeCommand({
      FunctionName: functionName,
      InvocationType: 'RequestResponse',
      Payload: new TextEncoder().encode(JSON.stringify(input)),
    }),
  );
  const text = answer.Payload === undefined ? '' : new TextDecoder().decode(answer.Payload);
  const result = parseJson(text);
  if (answer.FunctionError !== undefined) {
    const failure = (typeof result === 'object' && result !== null ? result : {}) as {
      errorType?: unknown;
      errorMessage?: unknown;
    };
    throw new SweepFunctionError(
      functionName,
      typeof failure.errorType === 'string' ? failure.errorType : answer.FunctionError,
      typeof failure.errorMessage === 'string' ? failure.errorMessage : text || '(no message)',
    );
  }
  io.out(JSON.stringify(result, null, 2));
  return result;
}

/** `text` as JSON, or the text itself when it is not JSON (a runtime's plain-text answer is still printed). */
function parseJson(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
