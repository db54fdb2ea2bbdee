// The Journal contract for the store journal on the local S3 (s3rver with If-None-Match / If-Match
// enforced per key): create is put-if-absent, and of two transitions from one revision exactly one wins.
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { StoreJournal } from '../../functions/adapters/store-journal.js';
import { startS3Server } from '../../infra/local/s3-server.js';
import { describeJournalContract } from '../support/journal-contract.js';

describeJournalContract({
  name: 'StoreJournal on the local S3',
  async open() {
    const server = await startS3Server({ buckets: ['lake'] });
    return {
      journal: new StoreJournal(new S3ObjectStore({ client: server.client(), bucket: 'lake' })),
      close: () => server.stop(),
    };
  },
});
