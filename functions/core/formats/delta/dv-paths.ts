// Where a Delta deletion vector's file lies (PROTOCOL.md "Deletion Vector Descriptor Schema"): the Z85 (ZeroMQ
// Base85) decoder Delta encodes DV file UUIDs and inline DVs with, and a `u` descriptor's path relative to the root.

/** Characters of a Z85-encoded UUID at the end of a `u` descriptor's path (16 bytes → 20 characters). */
const ENCODED_UUID_LENGTH = 20;

const Z85_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';
const Z85_VALUES = new Map([...Z85_ALPHABET].map((c, i) => [c, i]));

/**
 * Decodes Z85 (ZeroMQ's Base85, what Delta encodes inline DVs and DV file UUIDs with): every 5 characters
 * are one big-endian 32-bit word.
 * @throws Error for a length that is not a multiple of 5, a character outside the alphabet or a word ≥ 2^32.
 */
export function z85Decode(text: string): Uint8Array {
  if (text.length % 5 !== 0) throw new Error(`Z85 text of ${text.length} characters is not a multiple of 5`);
  const out = new Uint8Array((text.length / 5) * 4);
  const view = new DataView(out.buffer);
  for (let i = 0; i < text.length; i += 5) {
    let word = 0;
    for (let k = 0; k < 5; k++) {
      const c = text[i + k] as string;
      const v = Z85_VALUES.get(c);
      if (v === undefined) throw new Error(`${JSON.stringify(c)} is not a Z85 character`);
      word = word * 85 + v;
    }
    if (word > 0xffff_ffff) throw new Error(`Z85 group ${text.slice(i, i + 5)} exceeds 32 bits`);
    view.setUint32((i / 5) * 4, word, false);
  }
  return out;
}

/**
 * The path of the DV file a `u` descriptor names, relative to the table root: `<random prefix>/deletion_vector_<uuid>.bin`,
 * the UUID Z85-encoded in the descriptor's last 20 characters, the prefix (optional, untrusted text) before them.
 * @throws Error for a descriptor too short to hold a UUID, or not Z85.
 */
export function deletionVectorRelativePath(encoded: string): string {
  if (encoded.length < ENCODED_UUID_LENGTH) {
    throw new Error(`${JSON.stringify(encoded)} is too short to hold a Z85-encoded UUID`);
  }
  const prefix = encoded.slice(0, encoded.length - ENCODED_UUID_LENGTH);
  const hex = Buffer.from(z85Decode(encoded.slice(-ENCODED_UUID_LENGTH))).toString('hex');
  const uuid = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return `${prefix === '' ? '' : `${prefix}/`}deletion_vector_${uuid}.bin`;
}
