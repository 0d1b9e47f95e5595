/**
 * The journal's framing (`src/billing/journal/Frame.ts`): round trips, torn
 * tails, and flipped bytes, as properties over random frames.
 */
import { deepStrictEqual, strictEqual, throws } from "node:assert/strict"
import fc from "fast-check"
import {
  decodeFrames,
  encodeFrame,
  type Frame,
  HEADER_BYTES,
  MAX_PAYLOAD_BYTES
} from "../../src/billing/journal/Frame.ts"

const frame: fc.Arbitrary<Frame> = fc.record({
  kind: fc.constantFrom("record" as const, "folded" as const),
  seq: fc.oneof(fc.nat({ max: 1000 }), fc.maxSafeNat()),
  payload: fc.uint8Array({ maxLength: 300 })
})
const frames = fc.array(frame, { maxLength: 12 })

/** The frames laid end to end, and the offset where each starts (plus the total length last). */
const encodeAll = (list: ReadonlyArray<Frame>): { readonly bytes: Uint8Array; readonly boundaries: Array<number> } => {
  const encoded = list.map((f) => encodeFrame(f.kind, f.seq, f.payload))
  const boundaries = [0]
  for (const piece of encoded) boundaries.push(boundaries.at(-1)! + piece.byteLength)
  const bytes = new Uint8Array(boundaries.at(-1)!)
  encoded.forEach((piece, index) => bytes.set(piece, boundaries[index]))
  return { bytes, boundaries }
}

/** Frames as plain values, so `deepStrictEqual` compares payload bytes rather than views. */
const plain = (list: ReadonlyArray<Frame>) => list.map((f) => ({ kind: f.kind, seq: f.seq, payload: [...f.payload] }))

Deno.test("decodeFrames() returns any sequence of encoded frames whole, with goodLength the total", () => {
  fc.assert(fc.property(frames, (list) => {
    const { bytes } = encodeAll(list)
    const decoded = decodeFrames(bytes)
    deepStrictEqual(plain(decoded.frames), plain(list))
    strictEqual(decoded.goodLength, bytes.byteLength)
    strictEqual(decoded.corrupt, false)
  }))
})

Deno.test("decodeFrames() of any truncation returns the whole frames before the cut, goodLength at their end", () => {
  fc.assert(fc.property(frames, fc.double({ min: 0, max: 1, noNaN: true }), (list, at) => {
    const { bytes, boundaries } = encodeAll(list)
    const cut = Math.floor(at * bytes.byteLength)
    const whole = boundaries.filter((boundary) => boundary <= cut).length - 1
    const decoded = decodeFrames(bytes.subarray(0, cut))
    deepStrictEqual(plain(decoded.frames), plain(list.slice(0, whole)))
    strictEqual(decoded.goodLength, boundaries[whole])
    strictEqual(decoded.corrupt, false)
  }))
})

Deno.test("decodeFrames() stops at or before a frame with any byte flipped, never returning an altered frame", () => {
  const nonEmpty = fc.array(frame, { minLength: 1, maxLength: 8 })
  fc.assert(fc.property(
    nonEmpty,
    fc.nat(),
    fc.nat(),
    fc.integer({ min: 1, max: 255 }),
    (list, frameChoice, byteChoice, mask) => {
      const { bytes, boundaries } = encodeAll(list)
      const target = frameChoice % list.length
      const start = boundaries[target]
      const position = start + byteChoice % (boundaries[target + 1] - start)
      const flipped = bytes.slice()
      flipped[position] ^= mask
      const decoded = decodeFrames(flipped)
      // A prefix of the original frames, none of them the altered one.
      deepStrictEqual(plain(decoded.frames), plain(list.slice(0, decoded.frames.length)))
      strictEqual(decoded.frames.length <= target, true)
      strictEqual(decoded.goodLength, boundaries[decoded.frames.length])
    }
  ))
})

Deno.test("decodeFrames() reports garbage, an unknown kind and a length over the cap as corrupt", () => {
  const good = encodeFrame("record", 7, new Uint8Array([1, 2, 3]))
  const withTail = (tail: Uint8Array) => {
    const bytes = new Uint8Array(good.byteLength + tail.byteLength)
    bytes.set(good)
    bytes.set(tail, good.byteLength)
    return decodeFrames(bytes)
  }
  const garbage = withTail(new TextEncoder().encode("not a frame"))
  deepStrictEqual([garbage.frames.length, garbage.goodLength, garbage.corrupt], [1, good.byteLength, true])
  // Fewer bytes than a header, not starting like one: corrupt, not torn.
  deepStrictEqual(withTail(new Uint8Array([0, 0])).corrupt, true)
  deepStrictEqual(withTail(good.subarray(0, 3)).corrupt, false)

  const unknownKind = good.slice()
  unknownKind[4] = 9
  deepStrictEqual(decodeFrames(unknownKind), { frames: [], goodLength: 0, corrupt: true })

  const huge = good.slice()
  new DataView(huge.buffer).setUint32(5, MAX_PAYLOAD_BYTES + 1, true)
  deepStrictEqual(decodeFrames(huge), { frames: [], goodLength: 0, corrupt: true })
})

Deno.test("encodeFrame() lays out the documented header and refuses a seq that is not a safe integer", () => {
  const bytes = encodeFrame("folded", 2 ** 40 + 5, new Uint8Array([0xaa]))
  const view = new DataView(bytes.buffer)
  strictEqual(bytes.byteLength, HEADER_BYTES + 1)
  strictEqual(new TextDecoder().decode(bytes.subarray(0, 4)), "SJNL")
  strictEqual(view.getUint8(4), 2)
  strictEqual(view.getUint32(5, true), 1)
  strictEqual(view.getBigUint64(9, true), 2n ** 40n + 5n)
  strictEqual(bytes[HEADER_BYTES], 0xaa)
  deepStrictEqual(decodeFrames(bytes).frames[0].seq, 2 ** 40 + 5)
  throws(() => encodeFrame("record", -1, new Uint8Array()), RangeError)
  throws(() => encodeFrame("record", 1.5, new Uint8Array()), RangeError)
  throws(() => encodeFrame("record", Number.MAX_SAFE_INTEGER + 1, new Uint8Array()), RangeError)
})
