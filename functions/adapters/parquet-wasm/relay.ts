// The engine worker's write-only store: its output's multipart upload becomes `chunk` messages to the main thread,
// whose store does the I/O (see worker.ts). Kept apart from worker.ts so it is proven on the main thread.

import type { ObjectStore } from '../../ports/object-store.js';

/** Posts one chunk of the output, its ArrayBuffer moved (not copied) to the receiving thread. */
export type PostChunk = (bytes: Uint8Array, transfer: ArrayBuffer[]) => void;

/**
 * A store whose `putStream` posts each chunk of the body through `post`, transferring a fresh copy of it.
 *
 * Always a copy, made with `Uint8Array.prototype.slice`: the writer keeps the chunks it yields (the output's tail,
 * for the footer check at close), and a chunk may share its ArrayBuffer with other live views (a compressor's output
 * buffer, the Buffer pool). `chunk.slice()` would not do: on a Node Buffer — what node:zlib's ZSTD returns — it is a
 * view, so transferring its `.buffer` detached the writer's own chunk, and close failed with "Cannot perform
 * %TypedArray%.prototype.set on a detached ArrayBuffer" (Node.js 22.15, `pageCompression: 'native'` on workers).
 */
export function relayStore(post: PostChunk): ObjectStore {
  return {
    async putStream(_key: string, body: AsyncIterable<Uint8Array>) {
      let size = 0;
      for await (const chunk of body) {
        size += chunk.length;
        const copy: Uint8Array = Uint8Array.prototype.slice.call(chunk);
        post(copy, [copy.buffer as ArrayBuffer]);
      }
      return { etag: '', size };
    },
  } as unknown as ObjectStore;
}
