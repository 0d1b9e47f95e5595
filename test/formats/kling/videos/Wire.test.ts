/**
 * Kling's video wire with plain values: the submit body and path from the
 * canonical request, the upstream id keeping the creation path, the poll
 * answers (statuses, result URL and duration, failures), the error
 * classification by Kling's service codes, and the signed token.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Effect, Exit } from "effect"
import { decodeJwt, decodeProtectedHeader, jwtVerify } from "jose"
import { UpstreamFailed } from "../../../../src/errors/GatewayError.ts"
import { classifyKlingError, encodeKlingSubmit, klingVideoWire } from "../../../../src/formats/kling/videos/Wire.ts"
import { klingToken } from "../../../../src/upstreams/VideoAdapter.ts"

Deno.test("kling wire: text2video body from the canonical request", () => {
  const { action, body } = encodeKlingSubmit({
    model: "kling-v2-master",
    prompt: "a fox",
    negativePrompt: "blur",
    cfgScale: 0.3,
    resolution: "1080p",
    size: "720x1280",
    seconds: 10,
    generateAudio: true,
    watermark: false,
    references: [],
    metadata: { camera_control: { type: "simple" }, unrelated: 1 }
  }, "kling-v2-1-master")
  strictEqual(action, "text2video")
  deepStrictEqual(body, {
    model_name: "kling-v2-1-master",
    prompt: "a fox",
    negative_prompt: "blur",
    cfg_scale: 0.3,
    mode: "pro",
    aspect_ratio: "9:16",
    duration: "10",
    sound: "on",
    watermark_info: { enabled: false },
    camera_control: { type: "simple" }
  })
})

Deno.test("kling wire: image2video from frames; a data URI is sent as bare Base64; no aspect_ratio", () => {
  const call = klingVideoWire.submit({
    model: "m",
    prompt: "",
    aspectRatio: "16:9",
    references: [
      { kind: "image", role: "first_frame", ref: "https://example.com/a.png" },
      { kind: "image", role: "last_frame", ref: "data:image/png;base64,iVBORw0KGgo=" }
    ]
  }, "kling-v1")
  strictEqual(call.method, "POST")
  strictEqual(call.path, "/v1/videos/image2video")
  deepStrictEqual(call.body, {
    _tag: "json",
    body: { model_name: "kling-v1", image: "https://example.com/a.png", image_tail: "iVBORw0KGgo=" }
  })
})

Deno.test("kling wire: the upstream id keeps the creation path; the poll goes back to it", () => {
  const call = klingVideoWire.submit({ model: "m", prompt: "x", references: [] }, "kling-v1")
  const decoded = klingVideoWire.decodeSubmit(
    { code: 0, message: "SUCCEED", request_id: "r", data: { task_id: "867283741759111202", task_status: "submitted" } },
    call
  )
  deepStrictEqual(decoded, { upstreamId: "text2video:867283741759111202" })
  deepStrictEqual(klingVideoWire.poll("text2video:867283741759111202", "kling-v1"), {
    method: "GET",
    path: "/v1/videos/text2video/867283741759111202"
  })
  deepStrictEqual(klingVideoWire.poll("image2video:1", "m").path, "/v1/videos/image2video/1")
  for (
    const bad of [{ code: 1201, data: {} }, { code: 0, data: { task_id: "a b" } }, {
      code: 0,
      data: { task_id: "x:y" }
    }, null]
  ) {
    ok(klingVideoWire.decodeSubmit(bad, call) instanceof UpstreamFailed, JSON.stringify(bad))
  }
})

Deno.test("kling wire: poll answers map submitted/processing/succeed/failed", () => {
  const envelope = (data: Record<string, unknown>) => ({ code: 0, message: "SUCCEED", request_id: "r", data })
  deepStrictEqual(klingVideoWire.decodePoll(envelope({ task_id: "1", task_status: "submitted" }), "https://k/"), {
    status: "queued"
  })
  deepStrictEqual(klingVideoWire.decodePoll(envelope({ task_id: "1", task_status: "processing" }), "https://k/"), {
    status: "in_progress"
  })
  deepStrictEqual(
    klingVideoWire.decodePoll(
      envelope({
        task_id: "1",
        task_status: "succeed",
        task_result: { videos: [{ id: "v", url: "https://cdn.example/v.mp4", duration: "5.041" }] }
      }),
      "https://k/"
    ),
    { status: "completed", progress: 100, seconds: 6, content: { url: "https://cdn.example/v.mp4", withKey: false } }
  )
  const failed = klingVideoWire.decodePoll(
    envelope({ task_id: "1", task_status: "failed", task_status_msg: "Failure to pass the risk control system" }),
    "https://k/"
  )
  ok(!(failed instanceof UpstreamFailed))
  strictEqual(failed.status, "failed")
  deepStrictEqual(failed.error, { code: "video_generation_failed", message: "Failure to pass the risk control system" })
  for (
    const bad of [
      envelope({ task_status: "weird" }),
      envelope({ task_status: "succeed", task_result: { videos: [{ url: "javascript:alert(1)" }] } }),
      { code: 1203, message: "no", data: null },
      "text"
    ]
  ) {
    ok(klingVideoWire.decodePoll(bad, "https://k/") instanceof UpstreamFailed, JSON.stringify(bad))
  }
})

Deno.test("kling wire: errors classified by Kling's service codes, not their text", () => {
  const body = (code: number, message = "m") => JSON.stringify({ code, message, request_id: "r" })
  strictEqual(classifyKlingError(401, body(1004)).kind, "unauthorized")
  strictEqual(classifyKlingError(429, body(1102)).kind, "quota")
  strictEqual(classifyKlingError(429, body(1101)).kind, "quota")
  strictEqual(classifyKlingError(429, body(1100)).kind, "unauthorized")
  strictEqual(classifyKlingError(429, body(1303)).kind, "throttled")
  strictEqual(classifyKlingError(400, body(1201)).kind, "rejected")
  strictEqual(classifyKlingError(400, body(1301)).kind, "rejected")
  strictEqual(classifyKlingError(500, body(5000)).kind, "server")
  strictEqual(classifyKlingError(502, "<html>").kind, "server")
  strictEqual(classifyKlingError(429, "").kind, "throttled")
  // A code not in Kling's table: the HTTP status decides.
  strictEqual(classifyKlingError(503, body(1999)).kind, "server")
  strictEqual(classifyKlingError(400, body(4242)).kind, "rejected")
  strictEqual(classifyKlingError(400, body(1201, "duration is invalid")).message, "duration is invalid")
})

Deno.test("kling token: HS256, iss the access key, exp now+1800, nbf now-5; a key without | is refused", async () => {
  const now = 1_800_000_000
  const token = await Effect.runPromise(klingToken("ak-test-1|sk-test-secret-1", now))
  deepStrictEqual(decodeProtectedHeader(token), { alg: "HS256", typ: "JWT" })
  deepStrictEqual(decodeJwt(token), { iss: "ak-test-1", exp: now + 1800, nbf: now - 5 })
  await jwtVerify(token, new TextEncoder().encode("sk-test-secret-1"), { currentDate: new Date(now * 1000) })
  for (const key of ["sk-test-no-bar", "|sk-test", "ak-test|", "a|b|c"]) {
    const exit = await Effect.runPromiseExit(klingToken(key, Math.floor(Date.now() / 1000)))
    ok(Exit.isFailure(exit), key)
    ok(!JSON.stringify(exit).includes(key), "the message does not quote the key")
  }
})
