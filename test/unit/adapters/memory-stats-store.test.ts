// The StatsStore contract over the in-memory store: the same conditional semantics as the DynamoDB adapter
// (see test/integration/dynamodb-stats-store.test.ts), so trigger tests over it prove what production does.
import { MemoryStatsStore } from '../../../functions/adapters/memory-stats-store.js';
import { statsStoreContract } from '../../support/stats-store-contract.js';

let tables = 0;

statsStoreContract('MemoryStatsStore', async () => {
  tables += 1;
  return { stats: new MemoryStatsStore(), table: `events${tables}` };
});
