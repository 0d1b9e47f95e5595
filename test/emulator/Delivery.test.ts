/**
 * What a delivered answer leaves behind once it is over. The emulator's per-request signal is
 * `AbortSignal.any([request.signal, closing.signal])`; Deno keeps such a dependent signal alive from its
 * long-lived source (the emulator's `closing` signal) for as long as it has an `abort` listener, so a listener
 * left on it after the answer ended keeps the signal, the body stream and everything they hold until the
 * emulator closes.
 */
import { ok, strictEqual } from "node:assert/strict"
import { deliver, type Delivery, sseReply } from "../../emulator/Sse.ts"
import { collectable, settledHeap } from "../support/Heap.ts"
import { withEmulator } from "./Support.ts"

const frames = Array.from({ length: 6 }, (_, index) => `data: {"index":${index}}\n\n`)

type Ending = "read to the end" | "broken after events" | "ended early" | "cancelled by the client"

/** Delivers one paced answer on a signal that depends on `closing`, and ends it as `ending` says. */
const deliverOnce = async (closing: AbortSignal, ending: Ending, track: (value: object) => void): Promise<void> => {
  const own = new AbortController()
  const signal = AbortSignal.any([own.signal, closing])
  track(signal)
  const delivery: Delivery = {
    pacingMs: 1,
    breakAfterEvents: ending === "broken after events" ? 3 : undefined,
    endAfterEvents: ending === "ended early" ? 3 : undefined,
    signal,
    headers: {},
    onComplete: () => {},
    onCancel: () => {}
  }
  const response = deliver(sseReply(frames), delivery)
  const reader = response.body!.getReader()
  for (let read = 0; read < 8; read++) {
    if (ending === "cancelled by the client" && read === 2) {
      await reader.cancel()
      return
    }
    const next = await reader.read().catch(() => ({ done: true }))
    if (next.done) return
  }
}

for (const ending of ["read to the end", "broken after events", "ended early", "cancelled by the client"] as const) {
  Deno.test(`deliver: a paced answer ${ending} leaves no listener that keeps its signal alive`, async () => {
    const closing = new AbortController()
    const signals = collectable()
    for (let index = 0; index < 20; index++) await deliverOnce(closing.signal, ending, signals.track)
    const { tracked, collected } = await signals.count()
    strictEqual(collected, tracked, `${tracked - collected} of ${tracked} request signals still alive`)
    // The emulator is still up: closing it later must not find these answers.
    ok(!closing.signal.aborted)
    closing.abort()
  })
}

Deno.test("emulator: paced streamed answers read to the end leave the heap where it was", async () => {
  await withEmulator({ record: false }, async (emulator) => {
    emulator.setFaults([{ paceMs: 1 }])
    const ask = async (index: number) => {
      const response = await fetch(emulator.url + "/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer sk-test-emulator-0001" },
        body: JSON.stringify({
          model: "gpt-4o",
          stream: true,
          messages: [{ role: "user", content: `answer ${index}: ${"word ".repeat(20)}` }]
        })
      })
      strictEqual(response.status, 200)
      ok((await response.text()).includes("[DONE]"))
    }
    const batch = async (from: number, count: number) => {
      for (let start = from; start < from + count; start += 8) {
        await Promise.all(Array.from({ length: 8 }, (_, offset) => ask(start + offset)))
      }
    }
    await batch(0, 100)
    const before = await settledHeap()
    await batch(100, 200)
    const after = await settledHeap()
    const grown = after - before
    ok(grown < 512 * 1024, `the heap grew by ${(grown / 1024).toFixed(0)} KB over 200 finished answers`)
  })
})
