/**
 * The OpenAI video wire with plain values: the create body (seconds as the
 * API's string, size, an image reference as `input_reference.image_url`, no
 * caller metadata forwarded), the remix and content calls, the job id read
 * and put in paths safely, the statuses, a failure's code (moderation as
 * `content_policy`) and caller-safe message, and hostile answers refused as
 * `bad-body`.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type { UpstreamTaskState } from "../../../../src/canonical/Video.ts"
import { UpstreamFailed } from "../../../../src/errors/GatewayError.ts"
import { openAiVideoWire, upstreamIdOf } from "../../../../src/formats/openai/videos/Wire.ts"

const state = (json: unknown): UpstreamTaskState => {
  const decoded = openAiVideoWire.decodePoll(json, "https://api.openai.test/v1/videos/x")
  ok(!(decoded instanceof UpstreamFailed), `unexpected failure: ${JSON.stringify(decoded)}`)
  return decoded
}

Deno.test("openai video wire: the create call", () => {
  const call = openAiVideoWire.submit({
    model: "sora-2",
    prompt: "a fox",
    seconds: 8,
    size: "1280x720",
    references: [{ kind: "image", role: "first_frame", ref: "https://media.example.com/a.png" }],
    metadata: { style: "noir" }
  }, "sora-2-2025-10-06")
  deepStrictEqual(call, {
    method: "POST",
    path: "/v1/videos",
    body: {
      _tag: "json",
      body: {
        model: "sora-2-2025-10-06",
        prompt: "a fox",
        seconds: "8",
        size: "1280x720",
        input_reference: { image_url: "https://media.example.com/a.png" }
      }
    }
  })
  const bare = openAiVideoWire.submit({ model: "sora-2", prompt: "a fox", references: [] }, "sora-2")
  deepStrictEqual(bare.body, { _tag: "json", body: { model: "sora-2", prompt: "a fox" } })
})

Deno.test("openai video wire: remix, poll and content calls escape the job id", () => {
  const remix = openAiVideoWire.remix!("video_1/../x", { model: "sora-2", prompt: "at night", references: [] }, "m")
  deepStrictEqual(remix, {
    method: "POST",
    path: "/v1/videos/video_1%2F..%2Fx/remix",
    body: { _tag: "json", body: { prompt: "at night" } }
  })
  deepStrictEqual(openAiVideoWire.poll("video_abc", "m"), { method: "GET", path: "/v1/videos/video_abc" })
  deepStrictEqual(openAiVideoWire.content("video_abc", { status: "completed" }), {
    method: "GET",
    path: "/v1/videos/video_abc/content"
  })
})

Deno.test("openai video wire: the job id is read only when it is a plain id", () => {
  deepStrictEqual(openAiVideoWire.decodeSubmit({ id: "video_68d7512d07848190b3e45da0ecbebcde" }), {
    upstreamId: "video_68d7512d07848190b3e45da0ecbebcde"
  })
  for (const id of [undefined, 7, "", "a b", "x".repeat(300), "\u0000", "../etc", "id\ud800"]) {
    const decoded = openAiVideoWire.decodeSubmit({ id })
    ok(decoded instanceof UpstreamFailed && decoded.kind === "bad-body", String(id))
  }
  strictEqual(upstreamIdOf("models/veo/operations/abc"), "models/veo/operations/abc")
})

Deno.test("openai video wire: statuses, progress, length, size and the content location", () => {
  deepStrictEqual(state({ id: "v", status: "queued", progress: 0 }).status, "queued")
  const running = state({ id: "v", status: "in_progress", progress: 41.6, seconds: "8", size: "720x1280" })
  deepStrictEqual(running, {
    status: "in_progress",
    progress: 42,
    seconds: 8,
    width: 720,
    height: 1280,
    content: undefined,
    error: undefined
  })
  const done = state({ id: "v", status: "completed", progress: 100, seconds: "12", expires_at: 1764003600 })
  deepStrictEqual(done.content, { withKey: true, expiresAt: 1764003600 })
  strictEqual(done.seconds, 12)
  strictEqual(state({ id: "v", status: "in_progress", progress: 1e9 }).progress, 100)
  strictEqual(state({ id: "v", status: "in_progress", progress: -5 }).progress, 0)
  strictEqual(state({ id: "v", status: "in_progress", seconds: "NaN" }).seconds, undefined)
})

Deno.test("openai video wire: a failure's code and message are safe for the caller", () => {
  const blocked = state({
    id: "v",
    status: "failed",
    error: { code: "moderation_blocked", message: "Blocked by moderation." }
  })
  deepStrictEqual(blocked.error, { code: "content_policy", message: "Blocked by moderation." })
  const hostile = state({
    id: "v",
    status: "failed",
    error: { code: "bad code; DROP", message: "key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 \u0000 leaked" }
  })
  strictEqual(hostile.error?.code, "video_generation_failed")
  ok(!hostile.error?.message.includes("sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"))
  ok(!hostile.error?.message.includes("\u0000"))
  deepStrictEqual(state({ id: "v", status: "failed" }).error, {
    code: "video_generation_failed",
    message: "The upstream could not make the video."
  })
  const long = state({ id: "v", status: "failed", error: { code: "x", message: "y".repeat(100_000) } })
  ok((long.error?.message.length ?? 0) <= 500)
})

Deno.test("openai video wire: answers without a known status are bad bodies", () => {
  for (const json of [null, [], "completed", { status: "done" }, { status: 3 }, {}]) {
    const decoded = openAiVideoWire.decodePoll(json, "https://api.openai.test/")
    ok(decoded instanceof UpstreamFailed && decoded.kind === "bad-body", JSON.stringify(json))
  }
})
