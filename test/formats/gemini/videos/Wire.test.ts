/**
 * The Veo (Gemini API) video wire with plain values: the predictLongRunning
 * body from a canonical request (references by role, inline images, ratio,
 * resolution, duration, extras on an allowlist, what Veo does not take left
 * out), the operation name read and checked, the operation through Veo's
 * synonym table, failure codes and caller-safe messages, and the content URI
 * refused unless it is on the channel's own origin (the key goes with it).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { UpstreamTaskState, VideoRequest } from "../../../../src/canonical/Video.ts"
import { UpstreamFailed } from "../../../../src/errors/GatewayError.ts"
import { geminiSubmitBody, geminiVideoWire } from "../../../../src/formats/gemini/videos/Wire.ts"

const CHANNEL = "https://generativelanguage.googleapis.com/v1beta/models/veo/operations/abc"
const URI = "https://generativelanguage.googleapis.com/v1beta/files/abc123:download?alt=media"

const request = (fields: Partial<VideoRequest> = {}): VideoRequest => ({
  model: "videoa-2-0-260128",
  prompt: "a lighthouse",
  references: [],
  ...fields
})

const decode = (json: unknown, channel = CHANNEL) => geminiVideoWire.decodePoll(json, channel)

const state = (json: unknown): UpstreamTaskState => {
  const decoded = decode(json)
  ok(!(decoded instanceof UpstreamFailed), `unexpected failure: ${JSON.stringify(decoded)}`)
  return decoded
}

const badBody = (json: unknown, channel = CHANNEL): string => {
  const decoded = decode(json, channel)
  ok(decoded instanceof UpstreamFailed, `expected a failure, got ${JSON.stringify(decoded)}`)
  strictEqual(decoded.kind, "bad-body")
  return decoded.message
}

const done = (generateVideoResponse: unknown) => ({
  name: "models/veo/operations/abc",
  done: true,
  response: {
    "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
    generateVideoResponse
  }
})

Deno.test("gemini video wire: the submit call puts references by role and the settings Veo takes", () => {
  const call = geminiVideoWire.submit(
    request({
      seconds: 6,
      aspectRatio: "9:16",
      resolution: "1080p",
      watermark: true,
      generateAudio: true,
      references: [
        { kind: "image", role: "first_frame", ref: "data:image/png;base64,AAAA" },
        { kind: "image", role: "last_frame", ref: "data:image/jpeg;base64,BBBB" },
        { kind: "image", role: "reference_image", ref: "data:image/webp;base64,CCCC" },
        { kind: "video", role: "reference_video", ref: "https://generativelanguage.googleapis.com/v1beta/files/v" },
        { kind: "audio", role: "reference_audio", ref: "https://example.com/a.mp3" }
      ],
      metadata: { negativePrompt: "rain", seed: 3, sampleCount: 4, generateAudio: true }
    }),
    "veo-3.1-generate-preview"
  )
  strictEqual(call.method, "POST")
  strictEqual(call.path, "/v1beta/models/veo-3.1-generate-preview:predictLongRunning")
  deepStrictEqual(call.body, {
    _tag: "json",
    body: {
      instances: [{
        prompt: "a lighthouse",
        image: { bytesBase64Encoded: "AAAA", mimeType: "image/png" },
        lastFrame: { bytesBase64Encoded: "BBBB", mimeType: "image/jpeg" },
        video: { uri: "https://generativelanguage.googleapis.com/v1beta/files/v" },
        referenceImages: [{ image: { bytesBase64Encoded: "CCCC", mimeType: "image/webp" }, referenceType: "asset" }]
      }],
      parameters: { negativePrompt: "rain", seed: 3, aspectRatio: "9:16", resolution: "1080p", durationSeconds: 6 }
    }
  })
  strictEqual(
    geminiVideoWire.submit(request(), "tuned/model:x").path,
    "/v1beta/models/tuned%2Fmodel%3Ax:predictLongRunning"
  )
})

Deno.test("gemini video wire: a size gives the orientation and tier; a URL image is sent as the API refuses it", () => {
  deepStrictEqual(geminiSubmitBody(request({ size: "1280x720" })).parameters, {
    aspectRatio: "16:9",
    resolution: "720p"
  })
  deepStrictEqual(geminiSubmitBody(request({ size: "1080x1920" })).parameters, {
    aspectRatio: "9:16",
    resolution: "1080p"
  })
  deepStrictEqual(geminiSubmitBody(request({ size: "3840x2160" })).parameters, {
    aspectRatio: "16:9",
    resolution: "4k"
  })
  deepStrictEqual(geminiSubmitBody(request()), { instances: [{ prompt: "a lighthouse" }], parameters: {} })
  deepStrictEqual(
    geminiSubmitBody(request({
      prompt: "",
      references: [{ kind: "image", role: "first_frame", ref: "https://example.com/a.png" }]
    })).instances,
    [{ image: { uri: "https://example.com/a.png" } }]
  )
  deepStrictEqual(
    geminiSubmitBody(request({ metadata: { negativePrompt: "n".repeat(2001), personGeneration: ["x"] } })).parameters,
    {}
  )
})

Deno.test("gemini video wire: the operation name is read and checked before it goes in a path", () => {
  deepStrictEqual(geminiVideoWire.decodeSubmit({ name: "models/veo-3.1-generate-preview/operations/a1b2c3" }), {
    upstreamId: "models/veo-3.1-generate-preview/operations/a1b2c3"
  })
  deepStrictEqual(geminiVideoWire.decodeSubmit({ name: "operations/xyz" }), { upstreamId: "operations/xyz" })
  for (
    const bad of [{}, { name: "" }, { name: "models/../../files/x" }, { name: "models/veo/operations/a/b" }, {
      name: "https://evil.test/operations/a"
    }, null]
  ) {
    const decoded = geminiVideoWire.decodeSubmit(bad)
    ok(decoded instanceof UpstreamFailed && decoded.kind === "bad-body", JSON.stringify(bad))
  }
  deepStrictEqual(geminiVideoWire.poll("models/veo-3.1/operations/a1", "veo-3.1"), {
    method: "GET",
    path: "/v1beta/models/veo-3.1/operations/a1"
  })
  strictEqual(geminiVideoWire.remix, undefined)
})

Deno.test("gemini video wire: the operation through Veo's synonym table", () => {
  deepStrictEqual(state({ name: "models/veo/operations/abc" }), { status: "in_progress" })
  deepStrictEqual(state({ name: "models/veo/operations/abc", done: false }), { status: "in_progress" })
  deepStrictEqual(state(done({ generatedSamples: [{ video: { uri: URI } }] })), {
    status: "completed",
    progress: 100,
    content: { url: URI, withKey: true }
  })
  deepStrictEqual(state({ name: "x", done: true, error: { code: 13, message: "Internal error." } }), {
    status: "failed",
    progress: 100,
    error: { code: "internal", message: "Internal error." }
  })
  deepStrictEqual(state({ done: true, error: { code: 99 } }).error, {
    code: "upstream_error",
    message: "The upstream task failed."
  })
  deepStrictEqual(
    state(done({ raiMediaFilteredCount: 1, raiMediaFilteredReasons: ["Blocked by a safety filter."] })).error,
    { code: "content_policy", message: "Blocked by a safety filter." }
  )
  deepStrictEqual(state(done({ raiMediaFilteredCount: 2 })).error, {
    code: "content_policy",
    message: "Refused by content policy."
  })
  badBody(done({}))
  badBody(done({ generatedSamples: [{ video: {} }] }))
  badBody({ done: "yes" })
  badBody([])
})

Deno.test("gemini video wire: a content URI off the channel's origin is refused, so the key never leaves", () => {
  ok(
    badBody(done({ generatedSamples: [{ video: { uri: "https://evil.example/v1beta/files/a:download" } }] })).length > 0
  )
  badBody(done({ generatedSamples: [{ video: { uri: "http://generativelanguage.googleapis.com/v1beta/files/a" } }] }))
  badBody(
    done({ generatedSamples: [{ video: { uri: "https://generativelanguage.googleapis.com:8443/v1beta/files/a" } }] })
  )
  badBody(done({ generatedSamples: [{ video: { uri: "/v1beta/files/a:download" } }] }))
  badBody(done({ generatedSamples: [{ video: { uri: "javascript:alert(1)" } }] }))
  badBody(done({ generatedSamples: [{ video: { uri: URI } }] }), "not a url")
  // A channel behind its own host: its URIs are fine, Google's are not.
  const proxy = "https://gemini-proxy.internal.test/v1beta/models/veo/operations/a"
  badBody(done({ generatedSamples: [{ video: { uri: URI } }] }), proxy)
  const proxied = decode(
    done({
      generatedSamples: [{ video: { uri: "https://gemini-proxy.internal.test/v1beta/files/a:download?alt=media" } }]
    }),
    proxy
  )
  ok(!(proxied instanceof UpstreamFailed))
  deepStrictEqual(geminiVideoWire.content("models/veo/operations/abc", proxied), {
    method: "GET",
    path: "https://gemini-proxy.internal.test/v1beta/files/a:download?alt=media"
  })
})

Deno.test("gemini video wire: failure messages are caller-safe", () => {
  const hostile = state({
    done: true,
    error: { code: 3, message: `AIza${"k".repeat(35)} \u0000\udc00 ${"y".repeat(100_000)}` }
  }).error!
  strictEqual(hostile.code, "invalid_argument")
  ok(hostile.message.length <= 500 && hostile.message.isWellFormed() && !hostile.message.includes("\u0000"))
  ok(!hostile.message.includes("k".repeat(35)))
  const classified = geminiVideoWire.classifyError(
    429,
    JSON.stringify({ error: { code: 429, message: "slow down", status: "RESOURCE_EXHAUSTED" } })
  )
  deepStrictEqual(classified, { kind: "throttled", message: "slow down" })
  strictEqual(geminiVideoWire.classifyError(403, "{}").kind, "unauthorized")
})
