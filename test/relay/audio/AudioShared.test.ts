/**
 * `sseDataReader` hands back each `data:` payload once its line is complete,
 * however the chunks cut the lines (inside a UTF-8 character too), skips
 * other fields, and skips a line past its 4 MB bound without keeping it;
 * `eventOf` reads only JSON objects.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { eventOf, sseDataReader } from "../../../src/relay/audio/AudioShared.ts"

const bytes = (text: string) => new TextEncoder().encode(text)

Deno.test("sseDataReader: the data payloads of complete lines, whatever the chunking", () => {
  const body = bytes(
    'event: x\ndata: {"type":"a","delta":"héllo"}\r\n\ndata: {"type":"b"}\n\n: comment\ndata: [DONE]\n\n'
  )
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 1, max: body.length - 1 }), { maxLength: 8 }), (cuts) => {
      const reader = sseDataReader()
      const points = [0, ...cuts.toSorted((a, b) => a - b), body.length]
      const data: Array<string> = []
      for (let index = 1; index < points.length; index++) {
        data.push(...reader.push(body.subarray(points[index - 1], points[index])))
      }
      deepStrictEqual(data, ['{"type":"a","delta":"héllo"}', '{"type":"b"}', "[DONE]"])
    })
  )
})

Deno.test("sseDataReader: a line past 4 MB is skipped, and the next one read", () => {
  const reader = sseDataReader()
  deepStrictEqual(reader.push(bytes("data: " + "x".repeat(4 * 1024 * 1024 + 1))), [])
  deepStrictEqual(reader.push(bytes('yyy\ndata: {"type":"after"}\n')), ['{"type":"after"}'])
})

Deno.test("eventOf: JSON objects only", () => {
  deepStrictEqual(eventOf('{"type":"a"}'), { type: "a" })
  strictEqual(eventOf("[DONE]"), undefined)
  strictEqual(eventOf("[1,2]"), undefined)
  strictEqual(eventOf("null"), undefined)
})
