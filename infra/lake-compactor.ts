// The LakeCompactor L3 construct: everything one deployment needs to compact and maintain the
// configured Parquet tables. Synthesizes offline; later issues add the workflow and schedules.
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** One table the compactor looks after. */
export interface LakeCompactorTable {
  /** Unique, stable name used in executions, metrics and DynamoDB keys. */
  readonly name: string;
  /** Bucket name of the table. */
  readonly bucketName: string;
  /** Key prefix of the table root, e.g. `events/`. */
  readonly prefix: string;
  /**
   * Table format.
   * @default 'parquet'
   */
  readonly format?: 'parquet' | 'delta';
  /**
   * Hive partition columns, outermost first.
   * @default []
   */
  readonly partitionColumns?: readonly string[];
}

export interface LakeCompactorProps {
  /** Tables to profile and compact. At least one. */
  readonly tables: readonly LakeCompactorTable[];
  /**
   * Removal policy of stateful resources (the DynamoDB table).
   * @default RemovalPolicy.RETAIN — the journal is what makes a crashed commit recoverable.
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * Serverless small-file compaction for Parquet tables on S3.
 *
 * State lives in one DynamoDB table (single-table design, see README): partition statistics,
 * per-file items, trigger decisions, run journals and history.
 */
export class LakeCompactor extends Construct {
  /** The single table holding partition stats, file items, decisions, journals and history. */
  public readonly table: dynamodb.Table;
  /** Consumes S3 notifications and keeps partition statistics exact. */
  public readonly profilerFunction: nodejs.NodejsFunction;

  constructor(scope: Construct, id: string, props: LakeCompactorProps) {
    super(scope, id);
    if (props.tables.length === 0) {
      throw new Error('LakeCompactor: `tables` must name at least one table to compact.');
    }

    this.table = new dynamodb.Table(this, 'State', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: 'expiresAt',
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    // Lists partitions by state and priority (status CLI, sweep) without scanning.
    this.table.addGlobalSecondaryIndex({
      indexName: 'gsi1',
      partitionKey: { name: 'gsi1pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'gsi1sk', type: dynamodb.AttributeType.STRING },
    });

    const tablesJson = JSON.stringify(
      props.tables.map((t) => ({
        name: t.name,
        bucket: t.bucketName,
        prefix: t.prefix,
        format: t.format ?? 'parquet',
        partitionColumns: t.partitionColumns ?? [],
      })),
    );

    this.profilerFunction = this.nodeFunction('Profiler', 'profiler.ts', {
      description: 'Keeps per-partition file statistics exact from S3 notifications',
      memorySize: 512,
      timeout: Duration.seconds(60),
      environment: { TABLE_NAME: this.table.tableName, TABLES: tablesJson },
    });
    this.table.grantReadWriteData(this.profilerFunction);
  }

  /** One Lambda: Node.js 22 on arm64, an ESM bundle with source maps and its own log group. */
  private nodeFunction(
    id: string,
    handlerFile: string,
    options: Pick<nodejs.NodejsFunctionProps, 'description' | 'memorySize' | 'timeout' | 'environment'>,
  ): nodejs.NodejsFunction {
    const logGroup = new logs.LogGroup(this, `${id}Logs`, {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    return new nodejs.NodejsFunction(this, id, {
      entry: path.join(root, 'functions', 'handlers', handlerFile),
      handler: 'handler',
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      logGroup,
      tracing: lambda.Tracing.ACTIVE,
      ...options,
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        POWERTOOLS_SERVICE_NAME: 'lake-compactor',
        ...options.environment,
      },
      bundling: {
        format: nodejs.OutputFormat.ESM,
        target: 'node22',
        sourceMap: true,
        minify: true,
        // ESM bundles need `require` for the CommonJS dependencies esbuild inlines.
        banner: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);",
        externalModules: ['@aws-sdk/*'],
      },
      projectRoot: root,
      depsLockFilePath: path.join(root, 'package-lock.json'),
    });
  }
}
