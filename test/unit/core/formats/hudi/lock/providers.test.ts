// Hudi lock providers by name: the DynamoDB and storage-based providers map to the locks lake-compactor takes;
// every other provider is refused with a typed error naming the class, why its lock cannot be taken, and what to
// configure instead.
import { describe, expect, it } from 'vitest';
import { HudiLockProviderRefusedError } from '../../../../../../functions/core/formats/hudi/lock/errors.js';
import {
  HUDI_LOCK_PROVIDER_CLASSES,
  hudiLockProviderKind,
  refusedHudiLockProvider,
} from '../../../../../../functions/core/formats/hudi/lock/providers.js';

describe('hudiLockProviderKind', () => {
  it('takes the DynamoDB (configured or implicit key) and storage-based providers, whatever module Hudi put them in', () => {
    // Prepare / Act / Assess
    expect(hudiLockProviderKind(HUDI_LOCK_PROVIDER_CLASSES.dynamodb)).toBe('dynamodb');
    expect(hudiLockProviderKind('org.apache.hudi.client.transaction.lock.DynamoDBBasedLockProvider')).toBe(
      'dynamodb',
    );
    expect(hudiLockProviderKind(` ${HUDI_LOCK_PROVIDER_CLASSES.storage} `)).toBe('storage');
    expect(
      hudiLockProviderKind(
        'org.apache.hudi.aws.transaction.lock.DynamoDBBasedImplicitPartitionKeyLockProvider',
      ),
    ).toBe('dynamodb-implicit');
  });

  it.each([
    ['org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider', /ZooKeeper/],
    ['org.apache.hudi.client.transaction.lock.ZookeeperBasedImplicitBasePathLockProvider', /ZooKeeper/],
    ['org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider', /Hive Metastore/],
    ['org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider', /atomic create-if-absent/],
    ['org.apache.hudi.client.transaction.lock.InProcessLockProvider', /inside one JVM/],
    ['org.apache.hudi.client.transaction.lock.LocalProcessLockProvider', /inside one JVM/],
  ])('refuses %s by name, with the locks to configure instead', (providerClass, why) => {
    // Act
    const error = (() => {
      try {
        hudiLockProviderKind(providerClass);
      } catch (e) {
        return e;
      }
      return undefined;
    })();

    // Assess
    expect(error).toBeInstanceOf(HudiLockProviderRefusedError);
    const refusal = error as HudiLockProviderRefusedError;
    expect(refusal.providerClass).toBe(providerClass);
    expect(refusal.message).toContain(providerClass);
    expect(refusal.reason).toMatch(why);
    expect(refusal.message).toContain(HUDI_LOCK_PROVIDER_CLASSES.dynamodb);
    expect(refusal.message).toContain(HUDI_LOCK_PROVIDER_CLASSES.storage);
    expect(refusal.message).toMatch(/no-lock opt-in with a quiet window/);
    expect(refusal.retryable).toBe(false);
  });

  it('refuses a provider it does not know rather than guess its lock', () => {
    // Act / Assess
    expect(() => hudiLockProviderKind('com.example.MyLockProvider')).toThrow(
      /com\.example\.MyLockProvider.*not a Hudi lock provider lake-compactor knows/,
    );
  });

  it('tells the in-process lock writers when the no-lock opt-in is for them', () => {
    // Act
    const refusal = refusedHudiLockProvider('org.apache.hudi.client.transaction.lock.InProcessLockProvider');

    // Assess
    expect(refusal.remedy).toMatch(/^If that writer's table services are off and it is the only writer/);
  });
});
