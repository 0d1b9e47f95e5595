/**
 * A caller's WebSocket frames: what is accepted (one JSON object with a `type`) and the refusal of everything else
 * (binary, too large, not JSON, not an object, no type, too deep, a lone surrogate escaped), and the event rate.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { errorEvent, isRefusal, makeEventRate, readClientEvent } from "../../src/http/WebSocketFrames.ts"

const codeOf = (data: unknown, max = 1024) => {
  const read = readClientEvent(data, max)
  return isRefusal(read) ? read.code : "accepted"
}

Deno.test("readClientEvent: a JSON object with a type is accepted with its text and byte size", () => {
  const read = readClientEvent('{"type":"response.create","event_id":"e1","note":"é"}', 1024)
  ok(!isRefusal(read))
  strictEqual(read.type, "response.create")
  strictEqual(read.bytes, 54)
})

Deno.test("readClientEvent: every other frame is refused, naming the problem", () => {
  strictEqual(codeOf(new Uint8Array([123, 125])), "invalid_frame")
  strictEqual(codeOf("x".repeat(2048)), "frame_too_large")
  strictEqual(codeOf(`{"type":"a","t":"${"é".repeat(600)}"}`), "frame_too_large", "counted in UTF-8 bytes")
  strictEqual(codeOf("{nope"), "invalid_json")
  strictEqual(codeOf("[1]"), "invalid_event")
  strictEqual(codeOf("null"), "invalid_event")
  strictEqual(codeOf('{"type":7}'), "missing_required_parameter")
  strictEqual(codeOf('{"type":""}'), "missing_required_parameter")
  strictEqual(codeOf('{"type":"a","text":"\\ud800"}'), "invalid_json")
  strictEqual(codeOf('{"type":"a","\\udc00":1}'), "invalid_json")
  strictEqual(codeOf('{"type":"a","pair":"\\ud83d\\ude00"}'), "accepted", "a surrogate pair is fine")
  strictEqual(codeOf(`{"type":"a","x":${"[".repeat(100)}${"]".repeat(100)}}`), "invalid_json")
  const refused = readClientEvent('{"event_id":"client-1"}', 1024)
  ok(isRefusal(refused))
  strictEqual(refused.eventId, "client-1")
  strictEqual(refused.param, "type")
})

Deno.test("errorEvent: OpenAI's error event shape", () => {
  const event = JSON.parse(errorEvent({ code: "invalid_json", message: "Bad.", param: null, eventId: "c1" }))
  strictEqual(event.type, "error")
  ok(typeof event.event_id === "string")
  deepStrictEqual(event.error, {
    type: "invalid_request_error",
    code: "invalid_json",
    message: "Bad.",
    param: null,
    event_id: "c1"
  })
})

Deno.test("makeEventRate: at most perSecond events in any second; 0 admits all", () => {
  const rate = makeEventRate(3)
  deepStrictEqual([0, 10, 20, 30, 999].map((at) => rate.admit(at)), [true, true, true, false, false])
  strictEqual(rate.admit(1_000), true, "the first arrival left the window")
  const open = makeEventRate(0)
  ok(Array.from({ length: 100 }, () => open.admit(0)).every(Boolean))
})
