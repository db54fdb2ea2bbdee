// Reads a synthesized CloudFormation template the way the local cloud deploys it: every intrinsic
// (Ref, Fn::GetAtt, Fn::Join, Fn::Sub, ...) resolves to a deterministic local name or ARN.
//
// Physical names: a resource's explicit name property when it has one, else its logical id
// (buckets: lower-cased). ARNs follow the real formats, so a Lambda ARN ends in the function's
// logical id and can be mapped back to the handler (see `findResource`).
import { LocalCloudError } from './errors.js';

/** One resource as it appears in a template. */
export interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly Metadata?: Record<string, unknown>;
  readonly Condition?: string;
}

/** The parts of a template the harness reads. */
export interface CfnTemplate {
  readonly Resources?: Record<string, CfnResource>;
  readonly Parameters?: Record<string, { readonly Default?: unknown; readonly Type?: string }>;
  readonly Conditions?: Record<string, unknown>;
  readonly Mappings?: Record<string, Record<string, Record<string, unknown>>>;
}

/** The account a local deployment pretends to live in. */
export interface TemplateEnvironment {
  /** @default 'us-east-1' */
  readonly region?: string;
  /** @default '000000000000' */
  readonly accountId?: string;
  /** @default 'LocalStack' */
  readonly stackName?: string;
  /** Values for template Parameters (else their Default). */
  readonly parameters?: Readonly<Record<string, string>>;
}

/** The name property that, when set, is a resource's physical name. */
const NAME_PROPERTY: Readonly<Record<string, string>> = {
  'AWS::DynamoDB::Table': 'TableName',
  'AWS::DynamoDB::GlobalTable': 'TableName',
  'AWS::Lambda::Function': 'FunctionName',
  'AWS::SQS::Queue': 'QueueName',
  'AWS::SNS::Topic': 'TopicName',
  'AWS::StepFunctions::StateMachine': 'StateMachineName',
  'AWS::S3::Bucket': 'BucketName',
  'AWS::Events::Rule': 'Name',
  'AWS::Events::EventBus': 'Name',
  'AWS::IAM::Role': 'RoleName',
  'AWS::Logs::LogGroup': 'LogGroupName',
};

/**
 * A resolved view of one template. Resolution is lazy and memoized per resource, so a physical
 * name that is itself a token (`TableName: {Fn::Join: ...}`) resolves once, and cycles are reported.
 */
export class TemplateModel {
  readonly region: string;
  readonly accountId: string;
  readonly partition = 'aws';
  readonly stackName: string;
  private readonly names = new Map<string, string>();
  private readonly resolving = new Set<string>();
  private readonly conditions = new Map<string, boolean>();

  constructor(
    readonly template: CfnTemplate,
    private readonly environment: TemplateEnvironment = {},
  ) {
    this.region = environment.region ?? 'us-east-1';
    this.accountId = environment.accountId ?? '000000000000';
    this.stackName = environment.stackName ?? 'LocalStack';
  }

  /** Resources of one type, in template order, skipping those whose Condition is false. */
  resourcesOfType(type: string): [logicalId: string, resource: CfnResource][] {
    return Object.entries(this.template.Resources ?? {}).filter(
      ([, resource]) =>
        resource.Type === type && (resource.Condition === undefined || this.condition(resource.Condition)),
    );
  }

  /** The resource with this logical id; throws with the known ids when it does not exist. */
  resource(logicalId: string): CfnResource {
    const resource = this.template.Resources?.[logicalId];
    if (resource === undefined) {
      throw new LocalCloudError(
        `The template has no resource "${logicalId}"; check the logical id (cdk synth shows them).`,
      );
    }
    return resource;
  }

  /** The local physical name: the explicit name property, else the logical id (buckets lower-cased). */
  physicalName(logicalId: string): string {
    const known = this.names.get(logicalId);
    if (known !== undefined) return known;
    const resource = this.resource(logicalId);
    if (this.resolving.has(logicalId)) {
      throw new LocalCloudError(
        `The name of "${logicalId}" refers to itself; give the resource a literal name.`,
      );
    }
    this.resolving.add(logicalId);
    try {
      const property = NAME_PROPERTY[resource.Type];
      const explicit = property === undefined ? undefined : resource.Properties?.[property];
      let name: string;
      if (explicit !== undefined) name = String(this.resolve(explicit));
      else if (resource.Type === 'AWS::S3::Bucket') name = logicalId.toLowerCase();
      else if (resource.Type === 'AWS::Logs::LogGroup') name = `/aws/local/${logicalId}`;
      else name = logicalId;
      this.names.set(logicalId, name);
      return name;
    } finally {
      this.resolving.delete(logicalId);
    }
  }

  /** What `Ref` returns for a resource, per the CloudFormation reference of its type. */
  ref(logicalId: string): string {
    const resource = this.resource(logicalId);
    switch (resource.Type) {
      case 'AWS::SQS::Queue':
        return `https://sqs.${this.region}.amazonaws.com/${this.accountId}/${this.physicalName(logicalId)}`;
      case 'AWS::SNS::Topic':
      case 'AWS::StepFunctions::StateMachine':
        return this.arn(logicalId);
      default:
        return this.physicalName(logicalId);
    }
  }

  /** The ARN of a resource, in the real format of its service. */
  arn(logicalId: string): string {
    const { Type } = this.resource(logicalId);
    const name = this.physicalName(logicalId);
    const at = `${this.region}:${this.accountId}`;
    switch (Type) {
      case 'AWS::Lambda::Function':
        return `arn:aws:lambda:${at}:function:${name}`;
      case 'AWS::DynamoDB::Table':
      case 'AWS::DynamoDB::GlobalTable':
        return `arn:aws:dynamodb:${at}:table/${name}`;
      case 'AWS::SQS::Queue':
        return `arn:aws:sqs:${at}:${name}`;
      case 'AWS::SNS::Topic':
        return `arn:aws:sns:${at}:${name}`;
      case 'AWS::StepFunctions::StateMachine':
        return `arn:aws:states:${at}:stateMachine:${name}`;
      case 'AWS::S3::Bucket':
        return `arn:aws:s3:::${name}`;
      case 'AWS::Events::Rule':
        return `arn:aws:events:${at}:rule/${name}`;
      case 'AWS::Events::EventBus':
        return `arn:aws:events:${at}:event-bus/${name}`;
      case 'AWS::IAM::Role':
        return `arn:aws:iam::${this.accountId}:role/${name}`;
      case 'AWS::Logs::LogGroup':
        return `arn:aws:logs:${at}:log-group:${name}:*`;
      default:
        return `arn:aws:local:${at}:${Type.replaceAll('::', '-').toLowerCase()}/${logicalId}`;
    }
  }

  /** `Fn::GetAtt` of a resource attribute. Unknown attributes resolve to `<logicalId>.<attribute>`. */
  getAtt(logicalId: string, attribute: string): string {
    const { Type } = this.resource(logicalId);
    if (attribute === 'Arn' || attribute === 'TopicArn') return this.arn(logicalId);
    if (Type === 'AWS::SQS::Queue' && attribute === 'QueueUrl') return this.ref(logicalId);
    if (['QueueName', 'TopicName', 'Name', 'TableName'].includes(attribute))
      return this.physicalName(logicalId);
    if (Type === 'AWS::S3::Bucket' && attribute.endsWith('DomainName')) {
      return `${this.physicalName(logicalId)}.s3.${this.region}.amazonaws.com`;
    }
    if (attribute === 'StreamArn') return `${this.arn(logicalId)}/stream/local`;
    return `${logicalId}.${attribute}`;
  }

  /** Deeply resolves every intrinsic function in `value`. */
  resolve(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((item) => this.resolve(item));
    if (value === null || typeof value !== 'object') return value;
    const entries = Object.entries(value as Record<string, unknown>);
    const only = entries.length === 1 ? entries[0] : undefined;
    if (only !== undefined && (only[0] === 'Ref' || only[0].startsWith('Fn::') || only[0] === 'Condition')) {
      return this.intrinsic(only[0], only[1]);
    }
    const out: Record<string, unknown> = {};
    for (const [key, item] of entries) {
      const resolved = this.resolve(item);
      if (resolved !== NO_VALUE) out[key] = resolved;
    }
    return out;
  }

  /** Resolves `value` and requires a string (names, ARNs, definitions). */
  resolveString(value: unknown, what: string): string {
    const resolved = this.resolve(value);
    if (typeof resolved !== 'string') {
      throw new LocalCloudError(
        `${what} resolved to ${JSON.stringify(resolved)}, not a string; check the template.`,
      );
    }
    return resolved;
  }

  /** The logical id of a resource of `type` named by an ARN, a name, or a logical id; undefined if none. */
  findResource(type: string | readonly string[], nameOrArn: string): string | undefined {
    const types = typeof type === 'string' ? [type] : type;
    const candidates = types.flatMap((t) => this.resourcesOfType(t).map(([id]) => id));
    const bare = nameOrArn.replace(/:\$LATEST$/, '');
    for (const id of candidates) {
      if (id === bare || this.physicalName(id) === bare || this.arn(id) === bare || this.ref(id) === bare)
        return id;
    }
    // Lambda ARNs may carry a version or alias qualifier.
    for (const id of candidates) {
      if (bare.startsWith(`${this.arn(id)}:`)) return id;
    }
    return undefined;
  }

  private intrinsic(name: string, argument: unknown): unknown {
    switch (name) {
      case 'Ref':
        return this.refAny(String(argument));
      case 'Fn::GetAtt': {
        const [logicalId, attribute] = Array.isArray(argument)
          ? (argument as unknown[]).map((part) => String(this.resolve(part)))
          : String(argument).split(/\.(.*)/s);
        return this.getAtt(String(logicalId), String(attribute));
      }
      case 'Fn::Join': {
        const [separator, parts] = argument as [string, unknown];
        const list = this.resolve(parts);
        if (!Array.isArray(list)) throw new LocalCloudError('Fn::Join needs a list; check the template.');
        return list.map((part) => (typeof part === 'string' ? part : JSON.stringify(part))).join(separator);
      }
      case 'Fn::Sub':
        return this.sub(argument);
      case 'Fn::Select': {
        const [index, list] = argument as [unknown, unknown];
        const resolved = this.resolve(list);
        if (!Array.isArray(resolved))
          throw new LocalCloudError('Fn::Select needs a list; check the template.');
        return resolved[Number(this.resolve(index))];
      }
      case 'Fn::Split': {
        const [separator, source] = argument as [string, unknown];
        return this.resolveString(source, 'Fn::Split source').split(separator);
      }
      case 'Fn::GetAZs':
        return ['a', 'b', 'c'].map((zone) => `${this.region}${zone}`);
      case 'Fn::FindInMap': {
        const [map, top, second] = (argument as unknown[]).map((part) => String(this.resolve(part)));
        return this.template.Mappings?.[String(map)]?.[String(top)]?.[String(second)];
      }
      case 'Fn::If': {
        const [condition, whenTrue, whenFalse] = argument as [string, unknown, unknown];
        return this.resolve(this.condition(condition) ? whenTrue : whenFalse);
      }
      case 'Fn::Equals': {
        const [left, right] = argument as [unknown, unknown];
        return JSON.stringify(this.resolve(left)) === JSON.stringify(this.resolve(right));
      }
      case 'Fn::Not':
        return !this.resolve((argument as unknown[])[0]);
      case 'Fn::And':
        return (argument as unknown[]).every((item) => this.resolve(item) === true);
      case 'Fn::Or':
        return (argument as unknown[]).some((item) => this.resolve(item) === true);
      case 'Condition':
        return this.condition(String(argument));
      case 'Fn::Base64':
        return Buffer.from(this.resolveString(argument, 'Fn::Base64 input')).toString('base64');
      case 'Fn::ToJsonString':
        return JSON.stringify(this.resolve(argument));
      default:
        throw new LocalCloudError(
          `The intrinsic ${name} is not supported by the local cloud; avoid it in resources the harness runs (e.g. Fn::ImportValue: pass the value as a prop).`,
        );
    }
  }

  private refAny(target: string): unknown {
    switch (target) {
      case 'AWS::Region':
        return this.region;
      case 'AWS::AccountId':
        return this.accountId;
      case 'AWS::Partition':
        return this.partition;
      case 'AWS::URLSuffix':
        return 'amazonaws.com';
      case 'AWS::StackName':
        return this.stackName;
      case 'AWS::StackId':
        return `arn:aws:cloudformation:${this.region}:${this.accountId}:stack/${this.stackName}/local`;
      case 'AWS::NoValue':
        return NO_VALUE;
      case 'AWS::NotificationARNs':
        return [];
    }
    const parameter = this.template.Parameters?.[target];
    if (parameter !== undefined) return this.environment.parameters?.[target] ?? parameter.Default;
    return this.ref(target);
  }

  private sub(argument: unknown): string {
    const [text, variables] =
      typeof argument === 'string' ? [argument, {}] : (argument as [string, Record<string, unknown>]);
    return text.replace(/\$\{(!?)([^}]+)\}/g, (_match, literal: string, expression: string) => {
      if (literal === '!') return `\${${expression}}`;
      if (expression in variables) return String(this.resolve(variables[expression]));
      const dot = expression.indexOf('.');
      if (dot > 0 && !expression.startsWith('AWS::')) {
        return this.getAtt(expression.slice(0, dot), expression.slice(dot + 1));
      }
      return String(this.refAny(expression));
    });
  }

  private condition(name: string): boolean {
    const known = this.conditions.get(name);
    if (known !== undefined) return known;
    const definition = this.template.Conditions?.[name];
    if (definition === undefined) throw new LocalCloudError(`The template has no condition "${name}".`);
    const value = this.resolve(definition) === true;
    this.conditions.set(name, value);
    return value;
  }
}

/** Marker for `Ref: AWS::NoValue`: the property is dropped. */
const NO_VALUE = Symbol('AWS::NoValue');
