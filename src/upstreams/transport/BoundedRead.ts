/**
 * Reading a whole upstream body within a byte limit, for the answers read whole (a vendor's JSON, a token endpoint's):
 * a body past the limit is abandoned, never held whole in memory.
 *
 * @since 0.1.0
 */
import type { Effect as EffectType } from "effect"
import { Effect } from "effect"
import { concatBytes } from "../../domain/Bytes.ts"
import type { UpstreamFailed } from "../../errors/GatewayError.ts"

/**
 * The body as text when it is at most `limit` bytes, else `undefined` (the call is aborted past the limit, so a
 * vendor's oversized answer never sits whole in memory). Fails with the read's `UpstreamFailed`.
 *
 * @category upstream
 */
export const readBounded = (
  response: { readonly read: EffectType.Effect<Uint8Array | undefined, UpstreamFailed>; readonly abort: () => void },
  limit: number
): EffectType.Effect<string | undefined, UpstreamFailed> =>
  Effect.gen(function* () {
    const chunks: Array<Uint8Array> = []
    let size = 0
    while (true) {
      const chunk = yield* response.read
      if (chunk === undefined) break
      size += chunk.byteLength
      if (size > limit) {
        response.abort()
        return undefined
      }
      chunks.push(chunk)
    }
    return new TextDecoder().decode(concatBytes(chunks))
  })
