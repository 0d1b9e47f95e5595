/**
 * Vectors as OpenAI's `encoding_format: "base64"` carries them: the vector's
 * float32 values, little-endian, Base64-encoded (the `openai` SDK decodes
 * them with `new Float32Array(Buffer.from(text, "base64").buffer)`,
 * `toFloat32Array` in its `internal/utils/base64.ts`).
 *
 * @since 0.1.0
 */
import { Base64 } from "effect/encoding"

/**
 * `vector` as Base64 of little-endian float32 values (each number rounded to
 * the nearest float32).
 *
 * @category encoding
 */
export const encodeFloat32Base64 = (vector: ReadonlyArray<number>): string => {
  const bytes = new Uint8Array(vector.length * 4)
  const view = new DataView(bytes.buffer)
  for (let index = 0; index < vector.length; index++) view.setFloat32(index * 4, vector[index], true)
  return Base64.encode(bytes)
}

/**
 * The float32 values of a Base64 string of little-endian float32s, or
 * `undefined` when it is not Base64 or its length is not a multiple of 4 bytes.
 *
 * @category decoding
 */
export const decodeFloat32Base64 = (text: string): Array<number> | undefined => {
  const decoded = Base64.decode(text)
  if (decoded._tag === "Failure") return undefined
  const bytes = decoded.success
  if (bytes.byteLength % 4 !== 0) return undefined
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const out = new Array<number>(bytes.byteLength / 4)
  for (let index = 0; index < out.length; index++) out[index] = view.getFloat32(index * 4, true)
  return out
}
