/**
 * Stream obfuscation as OpenAI's streams do it: "Stream obfuscation adds
 * random characters to an `obfuscation` field on streaming delta events to
 * normalize payload sizes as a mitigation to certain side-channel attacks.
 * These obfuscation fields are included by default" and left out when the
 * request sets `stream_options.include_obfuscation: false` (openai@7.57.0,
 * `ChatCompletionStreamOptions.include_obfuscation`,
 * `ResponseCreateParams.StreamOptions.include_obfuscation`; the chunk field
 * `ChatCompletionChunk.obfuscation`). The gateway writes the streams of
 * translated answers itself, so it pads their delta events the same way.
 *
 * @since 0.1.0
 */

/**
 * Payload lengths are normalized to multiples of this many characters: a
 * delta of n characters gets `PAD_BLOCK - n % PAD_BLOCK` padding characters
 * (1 to `PAD_BLOCK`), so delta plus padding reveals only ⌈n / 32⌉. Sluice's
 * choice (OpenAI does not publish its padding rule).
 *
 * @category constants
 */
export const PAD_BLOCK = 32

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/** Random bytes drawn in batches: one `getRandomValues` call serves many events. */
const pool = new Uint8Array(4096)
let used = pool.length

const randomByte = (): number => {
  if (used === pool.length) {
    crypto.getRandomValues(pool)
    used = 0
  }
  return pool[used++]
}

/**
 * The `obfuscation` value for a delta event whose text is `delta`: random
 * letters and digits (from `crypto.getRandomValues`) that bring the delta's
 * length up to the next multiple of `PAD_BLOCK`.
 *
 * @category encoding
 */
export const obfuscationFor = (delta: string): string => {
  const length = PAD_BLOCK - (delta.length % PAD_BLOCK)
  let padding = ""
  // 248 = 4 × 62: bytes at or above it are redrawn, so every character is equally likely.
  while (padding.length < length) {
    const byte = randomByte()
    if (byte < 248) padding += ALPHABET[byte % ALPHABET.length]
  }
  return padding
}
