// The DynamoDB partition key of Hudi's `DynamoDBBasedImplicitPartitionKeyLockProvider`: the same lock as
// `DynamoDBBasedLockProvider`, on the item whose key is derived from the table's base path instead of configured.
// Read from apache/hudi:
//   hudi-aws/src/main/java/org/apache/hudi/aws/transaction/lock/DynamoDBBasedImplicitPartitionKeyLockProvider.java
//   (commit 00c1c4c5): key = HashID.generateXXHashAsString(FSUtils.s3aToS3(hoodie.base.path), BITS_64);
//   hudi-common/src/main/java/org/apache/hudi/common/util/hash/HashID.java (commit 1d683be0): XXHash64 of the UTF-8
//   bytes with HASH_SEED = 0xdabadaba — an int, so widened to the long seed 0xFFFFFFFFDABADABA — as 8 big-endian
//   bytes (HBase Bytes.toBytes(long)) in upper-case hex;
//   FSUtils.s3aToS3: `replaceFirst("(?i)^s3a://", "s3://")`;
//   hudi-aws/src/test/java/.../TestDynamoDBBasedImplicitPartitionKeyLockProvider.java (commit 38ea46ae): the golden
//   value C0E15D0CE1AD11CC for s3://my-bucket/my_lake/my_table (the unit test pins it).
// Newer Hudi sources normalise the base path first (trim, trailing slashes); for a base path without surrounding
// whitespace or a trailing slash that version derives the same key ("base paths without a trailing slash are
// unaffected"), and for any other the versions disagree — such a base path is refused here, with the way out:
// declare the key the writers log at start. XXHash64 is hyparquet's (a dependency already), checked against the
// reference C implementation (libxxhash 0.8.1) in the unit test.
import { xxhash64 } from 'hyparquet/src/xxhash.js';
import { InvalidInputError } from '../../../errors.js';

/** `HashID.HASH_SEED` (int 0xdabadaba) as the long Java passes to XXHash64: sign-extended. */
const HASH_SEED = BigInt.asUintN(64, BigInt(0xdabadaba | 0));

/** `FSUtils.s3aToS3`. */
export function s3aToS3(basePath: string): string {
  return basePath.replace(/^s3a:\/\//i, 's3://');
}

/**
 * The partition key Hudi's implicit-key DynamoDB lock provider derives for `basePath` (`hoodie.base.path` exactly as
 * the writers configure it, e.g. `s3a://bucket/warehouse/trips`).
 * @throws InvalidInputError for a base path Hudi releases derive different keys for (surrounding whitespace, a
 * trailing slash) or that names no table.
 */
export function hudiImplicitDynamoDbPartitionKey(basePath: string): string {
  const normalized = s3aToS3(basePath);
  if (
    normalized !== normalized.trim() ||
    /\/$/.test(normalized) ||
    !/^[a-z][a-z0-9+.-]*:\/\/[^/]+\/./i.test(normalized)
  ) {
    throw new InvalidInputError(
      `The Hudi base path ${JSON.stringify(basePath)} cannot be turned into the implicit DynamoDB lock key with certainty: Hudi releases derive different keys for a base path with surrounding whitespace or a trailing slash, and one without a table folder names no table. Declare the DynamoDB lock with the partition key the table's writers log at start ("The DynamoDB partition key of the lock provider for the base path … is …") instead`,
    );
  }
  const hash = xxhash64(new TextEncoder().encode(normalized), HASH_SEED);
  return hash.toString(16).toUpperCase().padStart(16, '0');
}
