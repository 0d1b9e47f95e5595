import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { isWebSocketUpgrade, makeFrameGate, utf8Bytes } from "../../src/http/WebSocketUpgrade.ts"

const limits = { maxFrameBytes: 16, maxEventsPerSecond: 2, idleSeconds: 0 }

Deno.test("a WebSocket upgrade is a GET with the websocket token, in any case", () => {
  ok(isWebSocketUpgrade(new Request("http://x/", { headers: { upgrade: "WebSocket" } })))
  ok(isWebSocketUpgrade(new Request("http://x/", { headers: { upgrade: "h2c, websocket" } })))
  ok(!isWebSocketUpgrade(new Request("http://x/", { method: "POST", headers: { upgrade: "websocket" } })))
  ok(!isWebSocketUpgrade(new Request("http://x/")))
})

Deno.test("utf8Bytes counts as TextEncoder does, lone surrogates as their 3-byte replacement", () => {
  const samples = ["", "abc", "é", "€", "😀", "\ud800", "a\udc00b", "x".repeat(2000) + "😀\ud800"]
  for (const text of samples) strictEqual(utf8Bytes(text), new TextEncoder().encode(text).byteLength, text.slice(0, 8))
})

Deno.test("the frame gate refuses binary, oversized and too-fast frames by name", () => {
  const gate = makeFrameGate(limits)
  deepStrictEqual(gate.admit("{}", 0), { text: "{}", bytes: 2 })
  strictEqual((gate.admit(new Uint8Array([1]), 0) as { code: string }).code, "invalid_frame")
  strictEqual((gate.admit("x", 0) as { code: string }).code, "rate_limit_exceeded")
  // Half a second refills one event.
  const big = gate.admit("x".repeat(17), 500) as { code: string; status: number }
  strictEqual(big.code, "frame_too_large")
  strictEqual(big.status, 413)
  deepStrictEqual(gate.admit("ok", 1500), { text: "ok", bytes: 2 })
})

Deno.test("a rate of 0 is no limit", () => {
  const gate = makeFrameGate({ ...limits, maxEventsPerSecond: 0 })
  for (let index = 0; index < 100; index++) ok("text" in gate.admit("{}", 0))
})
