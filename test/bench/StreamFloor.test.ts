/**
 * The bench's stream floor (`readingEvents` in `bench/BareProxy.ts`): the bytes
 * come out as they went in, one chunk per upstream read, whatever the split of
 * events across reads, and a cancel reaches the upstream body.
 */
import { deepStrictEqual, ok } from "node:assert/strict"
import { readingEvents } from "../../bench/BareProxy.ts"

const encoder = new TextEncoder()

const upstream = (chunks: ReadonlyArray<string>, onCancel?: () => void) => {
  let index = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (index < chunks.length) controller.enqueue(encoder.encode(chunks[index++]))
      else controller.close()
    },
    cancel: () => onCancel?.()
  }, { highWaterMark: 0 })
}

Deno.test("readingEvents: the same chunks and bytes, an event split across reads, [DONE] and non-JSON data let through", async () => {
  const chunks = [
    'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\ndata: {"choices":[{"del',
    'ta":{"content":"lo"}}]}\n\n',
    "data: not json\n\ndata: [DONE]\n\n"
  ]
  const out: Array<string> = []
  const decoder = new TextDecoder()
  for await (const chunk of readingEvents(upstream(chunks))) out.push(decoder.decode(chunk))
  deepStrictEqual(out, chunks)
})

Deno.test("readingEvents: cancelling the floor's stream cancels the upstream body", async () => {
  let cancelled = false
  const reader = readingEvents(upstream(["data: {}\n\n", "data: {}\n\n"], () => (cancelled = true))).getReader()
  await reader.read()
  await reader.cancel()
  ok(cancelled)
})
