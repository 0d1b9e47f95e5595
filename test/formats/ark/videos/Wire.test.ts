/**
 * The Ark video wire with plain values: the submit body from a canonical
 * request (references by role, ratio, resolution, duration, watermark,
 * generate_audio, metadata extras on an allowlist), the task id read and put
 * in the poll path safely, every Ark status through its synonym table, failure
 * codes and caller-safe messages, the result URL and its expiry, and error
 * classification from structured codes only.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { UpstreamTaskState, VideoRequest } from "../../../../src/canonical/Video.ts"
import { UpstreamFailed } from "../../../../src/errors/GatewayError.ts"
import { ARK_STATUSES, arkSubmitBody, arkVideoWire, classifyArkError } from "../../../../src/formats/ark/videos/Wire.ts"

const request = (fields: Partial<VideoRequest> = {}): VideoRequest => ({
  model: "videoa-2-0-260128",
  prompt: "a fox in the snow",
  references: [],
  ...fields
})

const state = (json: unknown): UpstreamTaskState => {
  const decoded = arkVideoWire.decodePoll(json, "https://ark.example.test/api/v3/contents/generations/tasks/x")
  ok(!(decoded instanceof UpstreamFailed), `unexpected failure: ${JSON.stringify(decoded)}`)
  return decoded
}

const failure = (json: unknown): UpstreamFailed => {
  const decoded = arkVideoWire.decodePoll(json, "https://ark.example.test/")
  ok(decoded instanceof UpstreamFailed, `expected a failure, got ${JSON.stringify(decoded)}`)
  strictEqual(decoded.kind, "bad-body")
  return decoded
}

Deno.test("ark video wire: the submit call carries the prompt, references by role and the request's settings", () => {
  const call = arkVideoWire.submit(
    request({
      seconds: 8,
      aspectRatio: "9:16",
      resolution: "1080p",
      watermark: false,
      generateAudio: true,
      references: [
        { kind: "image", role: "first_frame", ref: "https://example.com/first.png" },
        { kind: "image", role: "last_frame", ref: "data:image/png;base64,iVBORw0KGgo=" },
        { kind: "video", role: "reference_video", ref: "https://example.com/clip.mp4" },
        { kind: "audio", role: "reference_audio", ref: "asset://asset-1" }
      ],
      metadata: { seed: 7, camera_fixed: true, service_tier: "flex", callback_url: "https://evil.test/", model: "x" }
    }),
    "doubao-seedance-2-0-260128"
  )
  strictEqual(call.method, "POST")
  strictEqual(call.path, "/api/v3/contents/generations/tasks")
  deepStrictEqual(call.body, {
    _tag: "json",
    body: {
      seed: 7,
      camera_fixed: true,
      service_tier: "flex",
      model: "doubao-seedance-2-0-260128",
      content: [
        { type: "text", text: "a fox in the snow" },
        { type: "image_url", image_url: { url: "https://example.com/first.png" }, role: "first_frame" },
        { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" }, role: "last_frame" },
        { type: "video_url", video_url: { url: "https://example.com/clip.mp4" }, role: "reference_video" },
        { type: "audio_url", audio_url: { url: "asset://asset-1" }, role: "reference_audio" }
      ],
      ratio: "9:16",
      resolution: "1080p",
      duration: 8,
      watermark: false,
      generate_audio: true
    }
  })
})

Deno.test("ark video wire: a size gives the nearest ratio and the tier of its short side; extras are bounded", () => {
  const body = (fields: Partial<VideoRequest>) => arkSubmitBody(request(fields), "m")
  deepStrictEqual([body({ size: "1280x720" }).ratio, body({ size: "1280x720" }).resolution], ["16:9", "720p"])
  deepStrictEqual([body({ size: "480x864" }).ratio, body({ size: "480x864" }).resolution], ["9:16", "480p"])
  deepStrictEqual([body({ size: "1440x1440" }).ratio, body({ size: "1440x1440" }).resolution], ["1:1", "1080p"])
  deepStrictEqual([body({ size: "2176x928" }).ratio, body({ size: "1112x834" }).ratio], ["21:9", "4:3"])
  // The request's own ratio and resolution win over the size's.
  deepStrictEqual(
    [body({ size: "1280x720", aspectRatio: "1:1" }).ratio, body({ size: "1280x720", resolution: "480p" }).resolution],
    ["1:1", "480p"]
  )
  const plain = body({})
  deepStrictEqual(Object.keys(plain), ["model", "content"])
  const extras = body({
    metadata: { seed: { nested: 1 }, draft: "x".repeat(101), frames: Infinity, return_last_frame: true }
  })
  deepStrictEqual(Object.keys(extras), ["return_last_frame", "model", "content"])
  // An image-only request sends no text item.
  deepStrictEqual(
    body({ prompt: "", references: [{ kind: "image", role: "first_frame", ref: "https://e.test/a.png" }] }).content,
    [{ type: "image_url", image_url: { url: "https://e.test/a.png" }, role: "first_frame" }]
  )
})

Deno.test("ark video wire: the task id is read, checked, and escaped in the poll path", () => {
  deepStrictEqual(arkVideoWire.decodeSubmit({ id: "cgt-20260101120000-abcde" }), {
    upstreamId: "cgt-20260101120000-abcde"
  })
  for (const bad of [{}, { id: "" }, { id: 7 }, { id: "../../v1/x" }, { id: "a".repeat(200) }, null, "id"]) {
    const decoded = arkVideoWire.decodeSubmit(bad)
    ok(decoded instanceof UpstreamFailed && decoded.kind === "bad-body", JSON.stringify(bad))
  }
  deepStrictEqual(arkVideoWire.poll("cgt-1:2", "m"), {
    method: "GET",
    path: "/api/v3/contents/generations/tasks/cgt-1%3A2"
  })
  strictEqual(arkVideoWire.remix, undefined)
})

Deno.test("ark video wire: every Ark status through the synonym table", () => {
  deepStrictEqual(ARK_STATUSES, {
    queued: "queued",
    running: "in_progress",
    succeeded: "completed",
    failed: "failed",
    cancelled: "failed",
    expired: "failed"
  })
  deepStrictEqual(state({ id: "t", status: "queued", error: null }), { status: "queued", progress: 0 })
  deepStrictEqual(state({ id: "t", status: "running" }), { status: "in_progress" })
  deepStrictEqual(
    state({
      status: "succeeded",
      content: { video_url: "https://tos.example.test/v.mp4?sig=1" },
      updated_at: 1_700_000_000,
      duration: 5,
      framespersecond: 24
    }),
    {
      status: "completed",
      progress: 100,
      content: { url: "https://tos.example.test/v.mp4?sig=1", withKey: false, expiresAt: 1_700_086_400 },
      seconds: 5,
      fps: 24
    }
  )
  deepStrictEqual(state({ status: "cancelled", error: null }).error, {
    code: "cancelled",
    message: "The upstream task was cancelled."
  })
  deepStrictEqual(state({ status: "expired" }).error?.code, "expired")
  failure({ status: "pending" })
  failure({ status: "succeeded" })
  failure({ status: "succeeded", content: { video_url: "file:///etc/passwd" } })
  failure({ status: 3 })
  failure("succeeded")
  failure(null)
})

Deno.test("ark video wire: failure codes are structured and messages caller-safe", () => {
  deepStrictEqual(
    state({
      status: "failed",
      error: {
        code: "OutputVideoSensitiveContentDetected",
        message: "The request failed because the output video may contain sensitive information."
      }
    }).error,
    {
      code: "content_policy",
      message: "The request failed because the output video may contain sensitive information."
    }
  )
  deepStrictEqual(state({ status: "failed", error: { code: "InternalServiceError", message: "oops" } }).error, {
    code: "InternalServiceError",
    message: "oops"
  })
  const hostile = state({
    status: "failed",
    error: { code: "bad code\u0000!", message: `key sk-test-${"a".repeat(40)} \u0000 \ud800 ${"x".repeat(1_000_000)}` }
  }).error!
  strictEqual(hostile.code, "upstream_error")
  ok(hostile.message.length <= 500)
  ok(!hostile.message.includes("\u0000") && hostile.message.isWellFormed())
  ok(!hostile.message.includes("a".repeat(40)), hostile.message.slice(0, 80))
  deepStrictEqual(state({ status: "failed", error: null }).error, {
    code: "upstream_error",
    message: "The upstream task failed."
  })
  // A message that merely talks of sensitive content decides nothing: the code does.
  strictEqual(
    state({ status: "failed", error: { code: "InternalServiceError", message: "SensitiveContentDetected" } }).error
      ?.code,
    "InternalServiceError"
  )
})

Deno.test("ark video wire: the content call is the result URL, fetched without the key", () => {
  const completed = state({ status: "succeeded", content: { video_url: "https://tos.example.test/v.mp4" } })
  strictEqual(completed.content?.withKey, false)
  strictEqual(completed.content?.expiresAt, undefined)
  deepStrictEqual(arkVideoWire.content("cgt-1", completed), { method: "GET", path: "https://tos.example.test/v.mp4" })
})

Deno.test("ark video wire: errors classified from status and structured code, never from the message", () => {
  const body = (code: string, message = "m") => JSON.stringify({ error: { code, message, param: "", type: "x" } })
  deepStrictEqual(classifyArkError(403, body("AccountOverdueError")).kind, "quota")
  deepStrictEqual(classifyArkError(403, body("AccessDenied")).kind, "unauthorized")
  deepStrictEqual(classifyArkError(401, body("AuthenticationError")).kind, "unauthorized")
  deepStrictEqual(classifyArkError(429, body("QuotaExceeded")).kind, "quota")
  deepStrictEqual(classifyArkError(429, body("SetLimitExceeded")).kind, "quota")
  deepStrictEqual(
    classifyArkError(429, body("RateLimitExceeded.EndpointRPMExceeded", "QuotaExceeded")).kind,
    "throttled"
  )
  deepStrictEqual(classifyArkError(400, body("InvalidParameter")).kind, "rejected")
  deepStrictEqual(classifyArkError(500, body("InternalServiceError")).kind, "server")
  deepStrictEqual(classifyArkError(503, "<html>busy</html>"), { kind: "server", message: "Upstream answered HTTP 503" })
  const leaked = classifyArkError(400, body("InvalidParameter", `bad key sk-test-${"b".repeat(30)}`)).message
  ok(!leaked.includes("b".repeat(30)), leaked)
})
