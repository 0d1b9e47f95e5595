/**
 * Byte chunks as one array: what a body read chunk by chunk (within a size
 * limit) becomes once it is whole. Pure.
 *
 * @since 0.1.0
 */

/**
 * `chunks` joined, in order, into one new array of their summed length
 * (bytes). Never fails.
 *
 * @category bytes
 */
export const concatBytes = (chunks: ReadonlyArray<Uint8Array>): Uint8Array<ArrayBuffer> => {
  let size = 0
  for (const chunk of chunks) size += chunk.byteLength
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}
