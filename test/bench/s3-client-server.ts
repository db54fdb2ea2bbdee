// The s3-client benchmark's server, in a process of its own so that its CPU is not counted as the client's:
// the local S3 (s3rver, loopback) started with one bucket; its endpoint is sent to the parent, and it stops
// when the parent disconnects.
import { startS3Server } from '../../infra/local/s3-server.js';

const server = await startS3Server({ buckets: ['bench'] });
process.send?.({ endpoint: server.endpoint });
process.on('disconnect', () => {
  void server.stop().finally(() => process.exit(0));
});
