// The table config reaches the functions in their code (tables.json), not their environment: 100 tables
// synthesize with every environment far below Lambda's 4 KB, the functions read the same configs the TABLES
// variable gave them, a bundled handler runs on the generated file, and an oversized environment fails synth.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { afterAll, describe, expect, it } from 'vitest';
import { parseTableConfigs, tableFieldSchemas } from '../../functions/core/table-config.js';
import { loadTableConfigs } from '../../functions/shared/table-source.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { tablesJsonOf } from '../../infra/function-config.js';
import type { LakeCompactorProps, LakeCompactorTable } from '../../infra/lake-compactor.js';
import { discoverFunctionSources, FunctionRunner, type LocalFunction } from '../../infra/local/functions.js';
import {
  codeFilesOf,
  ENVIRONMENT_LIMIT_BYTES,
  environmentSize,
  projectFunction,
} from '../../infra/node-function.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const scratch = mkdtempSync(path.join(tmpdir(), 'table-config-delivery-'));
const OWNED_BUCKET = 'lakecompactor-databucket-1a2b3c4d';

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

/** 100 tables: 40 and 30 in two existing buckets, 30 in the construct-owned bucket; dated and tuned. */
const TABLES: LakeCompactorTable[] = Array.from({ length: 100 }, (_, i) => {
  const name = `table-${String(i).padStart(3, '0')}`;
  return {
    name,
    ...(i < 40 ? { bucketName: 'lake-a' } : i < 70 ? { bucketName: 'lake-b' } : {}),
    prefix: `warehouse/${name}/`,
    partitionColumns: ['date', 'region'],
    dateColumn: 'date',
    dateFormat: 'yyyy-MM-dd',
    ...(i % 3 === 0 ? { policy: { quietMinutes: 30, minInputFiles: 10 } } : {}),
  };
});
const PROPS: LakeCompactorProps = { tables: TABLES };

function synthStack(props: LakeCompactorProps = PROPS): LakeCompactorStack {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  return new LakeCompactorStack(app, 'HundredTables', { compactor: props });
}

/** The functions that carry a table config file. */
function tableFunctions(stack: Stack): lambda.Function[] {
  return stack.node
    .findAll()
    .filter((c): c is lambda.Function => c instanceof lambda.Function && codeFilesOf(c) !== undefined);
}

/** A function's environment variables, each deploy-time value (the owned bucket's Ref) as its real value. */
function deployedEnvironment(fn: lambda.Function): Record<string, string> {
  const resolved = Stack.of(fn).resolve((fn.node.defaultChild as lambda.CfnFunction).environment) as {
    variables: Record<string, unknown>;
  };
  return Object.fromEntries(
    Object.entries(resolved.variables).map(([name, value]) => [
      name,
      typeof value === 'string' ? value : OWNED_BUCKET,
    ]),
  );
}

describe('the table config of 100 tables', () => {
  const stack = synthStack();
  const template = Template.fromStack(stack);

  it('synthesizes with every function environment far below 4 KB and no TABLES variable', () => {
    // Prepare: every Lambda of the template (CDK's own bucket-notifications handler too)
    const functions = Object.entries(template.findResources('AWS::Lambda::Function')).map(
      ([id, f]) =>
        [
          id,
          (f as { Properties: { Environment?: { Variables?: Record<string, unknown> } } }).Properties,
        ] as const,
    );
    // Act: names and values in bytes, a deploy-time value (Ref, Fn::GetAtt) counted as 256
    const sizes = functions.map(([id, properties]) => {
      const variables = Object.entries(properties.Environment?.Variables ?? {});
      const bytes = variables.reduce(
        (sum, [name, value]) =>
          sum + Buffer.byteLength(name) + (typeof value === 'string' ? Buffer.byteLength(value) : 256),
        0,
      );
      return [id, bytes, variables.map(([name]) => name)] as const;
    });
    // Assess: "far below" is under 1.5 KB, 3/8 of the limit (the heap limit in NODE_OPTIONS took the sweep past 1 KB)
    expect(functions.length).toBeGreaterThanOrEqual(13);
    for (const [id, bytes, names] of sizes) {
      expect(bytes, id).toBeLessThan(1536);
      expect(names, id).not.toContain('TABLES');
    }
    for (const fn of tableFunctions(stack)) expect(environmentSize(fn).bytes).toBeLessThan(1536);
    // The config itself would not have fit: over four times the limit.
    const file = codeFilesOf(stack.compactor.profilerFunction)?.['tables.json'] ?? '';
    expect(file.length).toBeGreaterThan(4 * ENVIRONMENT_LIMIT_BYTES);
  });

  it('gives every table-reading function the file, read back as the configs the TABLES variable gave', () => {
    // Prepare: what the TABLES variable carried before, with the owned bucket's real name
    const expected = parseTableConfigs(
      TABLES.map((t) => ({
        name: t.name,
        bucket: t.bucketName ?? OWNED_BUCKET,
        prefix: t.prefix,
        format: 'parquet',
        partitionColumns: t.partitionColumns,
        dateColumn: t.dateColumn,
        dateFormat: t.dateFormat,
        ...(t.policy === undefined ? {} : { policy: t.policy }),
      })),
    );
    const functions = tableFunctions(stack);
    // Act: each function's code folder and environment, as Lambda would give them
    const read = functions.map((fn, i) => {
      const codeRoot = mkdtempSync(path.join(scratch, `code-${i}-`));
      for (const [name, content] of Object.entries(codeFilesOf(fn) ?? {})) {
        writeFileSync(path.join(codeRoot, name), content);
      }
      return loadTableConfigs({ ...deployedEnvironment(fn), LAMBDA_TASK_ROOT: codeRoot });
    });
    // Assess: profiler, sweep, 8 workflow steps, vacuum, tiering
    expect(functions).toHaveLength(12);
    for (const tables of read) expect(tables).toEqual(expected);
  });

  it('fails synth naming the largest variables when a function environment would pass 4 KB', () => {
    // Prepare
    const oversized = synthStack({ tables: TABLES.slice(0, 2) });
    oversized.compactor.profilerFunction.addEnvironment('EXTRA_SETTINGS', 'x'.repeat(5000));
    // Act
    const act = () => Template.fromStack(oversized);
    // Assess
    expect(act).toThrow(/over Lambda's 4096-byte limit for all variables together, so the deploy would fail/);
    expect(act).toThrow(/The largest: EXTRA_SETTINGS \(5014 bytes\)/);
  });
});

/** The validate step bundled by esbuild (into a fresh cloud assembly) with `codeFiles`. */
function bundledValidate(codeFiles: Readonly<Record<string, string>>): { stack: Stack; fn: lambda.Function } {
  const app = new App({ outdir: mkdtempSync(path.join(scratch, 'cdk.out-')) });
  const stack = new Stack(app, 'Bundled');
  const fn = projectFunction(stack, 'Validate', 'validate.ts', {
    environment: { TABLE_NAME: 'state', TABLES_FILE: 'tables.json', TABLES_REF_0: OWNED_BUCKET },
    codeFiles,
  });
  return { stack, fn };
}

describe('the fields of a table config', () => {
  it('delivers every field the functions read, as the props give it (none is dropped on the way)', () => {
    // Prepare: each field the functions' table config has, set alone to a value nothing else would produce
    // (the delivery copies; validating the value is the props schema's job). `bucket` comes from `bucketName`.
    const fields = Object.keys(tableFieldSchemas).filter((f) => !['name', 'prefix', 'bucket'].includes(f));
    // Act
    const delivered = fields.map((field) => {
      const sentinel = [`sentinel-${field}`];
      const table = { name: 't', prefix: 't/', [field]: sentinel } as unknown as LakeCompactorTable;
      const [config] = JSON.parse(tablesJsonOf([table], 'owned')) as Record<string, unknown>[];
      return { field, delivered: config?.[field] };
    });
    // Assess
    expect(fields).toEqual(expect.arrayContaining(['sortColumns', 'zOrderColumns', 'policy', 'catalog']));
    expect(delivered).toEqual(fields.map((field) => ({ field, delivered: [`sentinel-${field}`] })));
  });
});

describe('a bundled handler on the generated table config', () => {
  it('resolves tables of the construct-owned and of existing buckets from its tables.json', async () => {
    // Prepare: the validate step bundled with the 100-table config of the stack above
    const source = synthStack().compactor.workflow.functions.validate as lambda.Function;
    const { stack, fn } = bundledValidate(codeFilesOf(source) ?? {});
    const logicalId = stack.resolve((fn.node.defaultChild as lambda.CfnFunction).logicalId) as string;
    const bundle = discoverFunctionSources(stack, root).get(logicalId);
    const local: LocalFunction = {
      logicalId,
      name: 'validate',
      arn: 'arn:aws:lambda:us-east-1:111122223333:function:validate',
      exportName: 'handler',
      timeoutSeconds: 60,
      memoryMb: 256,
      env: { AWS_REGION: 'us-east-1', ...deployedEnvironment(fn) },
      source: bundle ?? {},
    };
    const runner = new FunctionRunner(new Map([[logicalId, local]]), {
      useBundles: true,
      bundleScratch: path.join(scratch, 'bundles'),
      nodeModules: path.join(root, 'node_modules'),
    });
    const event = (table: string) => ({
      input: { table, partition: 'date=2026-01-15/region=eu' },
      execution: { name: `run-${table}`, startTime: '2026-01-16T00:00:00.000Z' },
      stateMachineArn: 'arn:aws:states:us-east-1:111122223333:stateMachine:compact',
    });

    // Act
    const owned = await runner.invoke(logicalId, event('table-099'));
    const existing = await runner.invoke(logicalId, event('table-041'));

    // Assess
    expect(bundle?.bundleDirectory).toBeDefined();
    expect(owned).toMatchObject({ mode: 'single', run: { table: 'table-099', bucket: OWNED_BUCKET } });
    expect(existing).toMatchObject({ mode: 'single', run: { table: 'table-041', bucket: 'lake-b' } });
  });

  it('gets a new code asset exactly when its table config changes: a config change deploys like a code change', () => {
    // Prepare
    const config = (name: string) => ({
      'tables.json': JSON.stringify([{ name, bucket: 'lake', prefix: name }]),
    });
    const one = bundledValidate(config('a'));
    const again = bundledValidate(config('a'));
    const two = bundledValidate(config('b'));
    // Act
    const keyOf = ({ stack, fn }: { stack: Stack; fn: lambda.Function }) =>
      (stack.resolve((fn.node.defaultChild as lambda.CfnFunction).code) as { s3Key: string }).s3Key;
    // Assess
    expect(keyOf(one)).toMatch(/^[0-9a-f]{64}\.zip$/);
    expect(keyOf(again)).toBe(keyOf(one));
    expect(keyOf(two)).not.toBe(keyOf(one));
  });
});
