/**
 * `wavMillis` reads a WAV file's duration by walking its chunks (a `LIST`
 * chunk before `data`, an odd-sized chunk's pad byte, a `data` size past the
 * end cut to what is there), and says nothing of other bytes; `wavOf` wraps
 * PCM losslessly (the bytes after the header are the PCM); `durationBoundMillis`
 * is the 8 kbit/s bound.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { durationBoundMillis, wavMillis, wavOf } from "../../../src/formats/audio/AudioFile.ts"

/** A WAV file with the given chunks between `fmt ` and `data` (16-bit mono at `rate`), `samples` samples long. */
const wavWith = (rate: number, samples: number, extra: ReadonlyArray<{ id: string; size: number }>, cut = 0) => {
  const chunks: Array<number> = []
  const push32 = (value: number) => chunks.push(value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, value >>> 24)
  const push16 = (value: number) => chunks.push(value & 0xff, value >>> 8)
  const ascii = (text: string) => chunks.push(...[...text].map((char) => char.charCodeAt(0)))
  ascii("RIFF")
  push32(0)
  ascii("WAVE")
  ascii("fmt ")
  push32(16)
  push16(1)
  push16(1)
  push32(rate)
  push32(rate * 2)
  push16(2)
  push16(16)
  for (const chunk of extra) {
    ascii(chunk.id)
    push32(chunk.size)
    chunks.push(...new Array(chunk.size + (chunk.size % 2)).fill(0))
  }
  ascii("data")
  push32(samples * 2)
  chunks.push(...new Array(Math.max(0, samples * 2 - cut)).fill(0))
  return new Uint8Array(chunks)
}

Deno.test("wavMillis: the duration from the fmt and data chunks, past LIST and odd-sized chunks", () => {
  strictEqual(wavMillis(wavWith(16_000, 16_000, [])), 1000)
  strictEqual(wavMillis(wavWith(8_000, 12_000, [{ id: "LIST", size: 25 }, { id: "fact", size: 4 }])), 1500)
  // A data size past the end of the file: only what is there counts.
  strictEqual(wavMillis(wavWith(16_000, 16_000, [], 16_000)), 500)
})

Deno.test("wavMillis: undefined for bytes that are not a WAV file", () => {
  strictEqual(wavMillis(new TextEncoder().encode("just some text, not RIFF")), undefined)
  strictEqual(wavMillis(new Uint8Array([0xff, 0xfb, 0x90, 0xc4])), undefined)
  const noRate = wavWith(0, 10, [])
  strictEqual(wavMillis(noRate), undefined)
})

Deno.test("wavOf: a WAV header around the PCM, read back to the same duration (property)", () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 4000 }), fc.constantFrom(8_000, 16_000, 24_000), (samples, rate) => {
    const pcm = new Uint8Array(samples * 2).map((_, index) => index % 251)
    const wav = wavOf(pcm, rate)
    deepStrictEqual(wav.subarray(44), pcm)
    strictEqual(wavMillis(wav), Math.ceil(samples * 2 * 1000 / (rate * 2)))
  }))
})

Deno.test("durationBoundMillis: a file's length at 8 kbit/s", () => {
  strictEqual(durationBoundMillis(1000), 1000)
  strictEqual(durationBoundMillis(25 * 1024 * 1024), 26_214_400)
})
