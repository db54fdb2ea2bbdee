// The partition key of Hudi's DynamoDBBasedImplicitPartitionKeyLockProvider: Hudi's own golden value, s3a folded
// onto s3, and vectors of the reference C XXHash64 (libxxhash 0.8.1, called with the seed Java passes:
// 0xdabadaba sign-extended) for paths that exercise the 32-byte stripes; base paths Hudi releases disagree on are
// refused rather than guessed.
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../../../../functions/core/errors.js';
import {
  hudiImplicitDynamoDbPartitionKey,
  s3aToS3,
} from '../../../../../../functions/core/formats/hudi/lock/implicit-partition-key.js';

describe('hudiImplicitDynamoDbPartitionKey', () => {
  it("derives Hudi's pinned key for its canonical base path (TestDynamoDBBasedImplicitPartitionKeyLockProvider)", () => {
    // Act / Assess
    expect(hudiImplicitDynamoDbPartitionKey('s3://my-bucket/my_lake/my_table')).toBe('C0E15D0CE1AD11CC');
  });

  it('folds s3a:// (any case) onto s3:// as FSUtils.s3aToS3 does', () => {
    // Act / Assess
    expect(hudiImplicitDynamoDbPartitionKey('s3a://my-bucket/my_lake/my_table')).toBe('C0E15D0CE1AD11CC');
    expect(hudiImplicitDynamoDbPartitionKey('S3A://my-bucket/my_lake/my_table')).toBe('C0E15D0CE1AD11CC');
    expect(s3aToS3('s3a://b/s3a://x')).toBe('s3://b/s3a://x');
  });

  it.each([
    ['s3://bucket/path/to/table', '97DC1CDAC2AEC247'],
    ['s3://my-bucket/warehouse/trips', '9A2D9B34168D94C6'],
    [`s3://a/${'x'.repeat(100)}`, '6F9D5F989BB687C3'],
  ])('agrees with the reference XXHash64 for %s', (basePath, key) => {
    // Act / Assess
    expect(hudiImplicitDynamoDbPartitionKey(basePath)).toBe(key);
  });

  it.each([
    's3://my-bucket/my_lake/my_table/',
    ' s3://my-bucket/my_lake/my_table',
    's3://my-bucket/',
    's3://',
    '',
  ])('refuses %j, for which Hudi releases derive different keys or which names no table', (basePath) => {
    // Act / Assess
    expect(() => hudiImplicitDynamoDbPartitionKey(basePath)).toThrow(InvalidInputError);
    expect(() => hudiImplicitDynamoDbPartitionKey(basePath)).toThrow(
      /the partition key the table's writers log/,
    );
  });
});
