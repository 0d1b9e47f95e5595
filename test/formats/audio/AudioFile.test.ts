/**
 * `wavMillis` reads a WAV file's duration by walking its chunks (a `LIST`
 * chunk before `data`, an odd-sized chunk's pad byte, a `data` size past the
 * end cut to what is there), and says nothing of other bytes; `wavOf` wraps
 * PCM losslessly (the bytes after the header are the PCM); `durationBoundMillis`
 * is the 8 kbit/s bound; `audioMillis` reads the duration of real encoders'
 * files in every container a transcription takes (`test/fixtures/audio/`),
 * and believes no header that claims more than the file's size holds.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { fileTypeFromBuffer } from "file-type"
import { mp3Seconds } from "../../../emulator/Audio.ts"
import { audioMillis, durationBoundMillis, wavMillis, wavOf } from "../../../src/formats/audio/AudioFile.ts"

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

/** The fixtures (`test/fixtures/audio/README.md`): a 2.5 s tone, and what each encoder's padding makes of it. */
const FIXTURES: ReadonlyArray<readonly [name: string, millis: number]> = [
  ["tone.mp3", 2592],
  ["tone.m4a", 2564],
  ["tone.ogg", 2500],
  ["tone.webm", 2508],
  ["tone.flac", 2500],
  ["tone.wav", 2500]
]

Deno.test("audioMillis: the duration of mp3, m4a, ogg/opus, webm, flac and wav files from their bytes", async () => {
  for (const [name, expected] of FIXTURES) {
    const bytes = await Deno.readFile(new URL(`../../fixtures/audio/${name}`, import.meta.url))
    const sniffed = await fileTypeFromBuffer(bytes)
    ok(sniffed !== undefined, name)
    const millis = await audioMillis(bytes, sniffed.mime)
    ok(millis !== undefined && Math.abs(millis - expected) <= 2, `${name} (${sniffed.mime}): ${millis} ms`)
    // Far below what the size bound would have held.
    ok(millis < durationBoundMillis(bytes.length), name)
  }
})

Deno.test("audioMillis: undefined for bytes with no duration, and for a header claiming more than its size holds", async () => {
  strictEqual(await audioMillis(new Uint8Array(0), "audio/mpeg"), undefined)
  strictEqual(await audioMillis(new TextEncoder().encode("not audio at all, just text"), "audio/mpeg"), undefined)
  // A FLAC STREAMINFO declaring an hour of 24 kHz audio in 42 bytes (no frames): not believed.
  const flac = new Uint8Array(42)
  flac.set([0x66, 0x4c, 0x61, 0x43, 0x80, 0, 0, 34])
  const view = new DataView(flac.buffer)
  view.setUint16(8, 4096)
  view.setUint16(10, 4096)
  view.setBigUint64(18, (24_000n << 44n) | (15n << 36n) | (24_000n * 3600n))
  strictEqual(await audioMillis(flac, "audio/x-flac"), undefined)
})

Deno.test("audioMillis and the emulator's mp3Seconds agree on the emulator's MP3 frames", async () => {
  // The emulator's speech mp3: MPEG-1 Layer III frames, 1152 samples at 44.1 kHz each.
  const frames = 100
  const mp3 = new Uint8Array(frames * 417)
  for (let frame = 0; frame < frames; frame++) mp3.set([0xff, 0xfb, 0x90, 0xc4], frame * 417)
  strictEqual(await audioMillis(mp3, "audio/mpeg"), Math.ceil(frames * 1152 * 1000 / 44_100))
  strictEqual(mp3Seconds(mp3), frames * 1152 / 44_100)
})
