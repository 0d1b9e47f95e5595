/**
 * The Kling-shaped request decoder and the Kling envelope encoders with plain
 * values: which fields carry into the canonical request, each rule naming its
 * field, hostile input never throwing, and the answer and error envelopes.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { decodeKlingRequest } from "../../../../src/formats/kling/videos/RequestDecoder.ts"
import {
  encodeKlingError,
  encodeKlingTask,
  klingErrorCode
} from "../../../../src/formats/kling/videos/ResponseCodec.ts"

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

Deno.test("kling decoder: text2video fields carry into the canonical request", () => {
  const decoded = decodeKlingRequest({
    model_name: "kling-v2-master",
    prompt: "a fox",
    negative_prompt: "blur",
    cfg_scale: 0.5,
    mode: "pro",
    aspect_ratio: "1:1",
    duration: "10",
    sound: "off",
    watermark_info: { enabled: true },
    callback_url: "",
    external_task_id: "mine-1",
    camera_control: { type: "simple" },
    unknown_field: 1
  }, "text2video")
  ok(Result.isSuccess(decoded))
  deepStrictEqual(decoded.success, {
    model: "kling-v2-master",
    prompt: "a fox",
    negativePrompt: "blur",
    cfgScale: 0.5,
    seconds: 10,
    aspectRatio: "1:1",
    resolution: "1080p",
    watermark: true,
    generateAudio: false,
    references: [],
    metadata: { camera_control: { type: "simple" } },
    externalTaskId: "mine-1"
  })
})

Deno.test("kling decoder: defaults (kling-v1, 5 s, std) and image2video frames", () => {
  const decoded = decodeKlingRequest(
    { image: PNG, image_tail: "https://example.com/b.png", mode: "std" },
    "image2video"
  )
  ok(Result.isSuccess(decoded))
  deepStrictEqual(decoded.success, {
    model: "kling-v1",
    prompt: "",
    seconds: 5,
    resolution: "720p",
    references: [
      { kind: "image", role: "first_frame", ref: `data:image/png;base64,${PNG}`, param: "image" },
      { kind: "image", role: "last_frame", ref: "https://example.com/b.png", param: "image_tail" }
    ]
  })
  const legacy = decodeKlingRequest({ model: "kling-v1-6", prompt: "x" }, "text2video")
  ok(Result.isSuccess(legacy))
  strictEqual(legacy.success.model, "kling-v1-6")
})

Deno.test("kling decoder: each rule names its field", () => {
  const cases: ReadonlyArray<readonly [unknown, "text2video" | "image2video", string]> = [
    [{}, "text2video", "prompt"],
    [{ prompt: "x".repeat(2501) }, "text2video", "prompt"],
    [{ prompt: "x", negative_prompt: 5 }, "text2video", "negative_prompt"],
    [{ prompt: "x", cfg_scale: -0.1 }, "text2video", "cfg_scale"],
    [{ prompt: "x", cfg_scale: "0.5" }, "text2video", "cfg_scale"],
    [{ prompt: "x", mode: "turbo" }, "text2video", "mode"],
    [{ prompt: "x", aspect_ratio: "21:9" }, "text2video", "aspect_ratio"],
    [{ prompt: "x", duration: "8" }, "text2video", "duration"],
    [{ prompt: "x", duration: true }, "text2video", "duration"],
    [{ prompt: "x", sound: "loud" }, "text2video", "sound"],
    [{ prompt: "x", watermark_info: { enabled: "yes" } }, "text2video", "watermark_info"],
    [{ prompt: "x", callback_url: "https://evil.example/" }, "text2video", "callback_url"],
    [{ prompt: "x", external_task_id: "has space" }, "text2video", "external_task_id"],
    [{ prompt: "x", model_name: "" }, "text2video", "model_name"],
    [{ prompt: "x" }, "image2video", "image"],
    [{ image: "ftp://example.com/a.png" }, "image2video", "image"],
    [{ image: "https://user:pw@example.com/a.png" }, "image2video", "image"],
    [{ image: "data:text/plain;base64,aGk=" }, "image2video", "image"],
    [{ image: "asset://not-an-id" }, "image2video", "image"],
    [{ image: "https://example.com/a.png", image_tail: 7 }, "image2video", "image_tail"],
    [{ prompt: "x", camera_control: { blob: "x".repeat(20_000) } }, "text2video", "camera_control"]
  ]
  for (const [body, action, param] of cases) {
    const decoded = decodeKlingRequest(body, action)
    ok(Result.isFailure(decoded), JSON.stringify(body).slice(0, 80))
    strictEqual(decoded.failure.param, param, JSON.stringify(body).slice(0, 80))
    ok(decoded.failure.message.length > 0)
  }
})

Deno.test("kling decoder: any input gives a request or an InvalidRequest, never a throw", () => {
  fc.assert(
    fc.property(fc.anything(), fc.constantFrom("text2video" as const, "image2video" as const), (body, action) => {
      const decoded = decodeKlingRequest(body, action)
      return Result.isSuccess(decoded)
        ? typeof decoded.success.model === "string"
        : decoded.failure._tag === "InvalidRequest"
    }),
    { numRuns: 500 }
  )
})

Deno.test("kling envelope: statuses, times in ms, the result only once succeed", () => {
  const view = {
    id: "video_abc",
    status: "completed" as const,
    statusMessage: "",
    createdAtMs: 1000,
    updatedAtMs: 2000,
    url: "https://gw.example/v1/videos/video_abc/content",
    seconds: 5,
    externalTaskId: "mine"
  }
  deepStrictEqual(encodeKlingTask(view, "req-1"), {
    code: 0,
    message: "SUCCEED",
    request_id: "req-1",
    data: {
      task_id: "video_abc",
      task_status: "succeed",
      task_status_msg: "",
      task_info: { external_task_id: "mine" },
      created_at: 1000,
      updated_at: 2000,
      task_result: { videos: [{ id: "video_abc", url: view.url, duration: "5" }] }
    }
  })
  const queued = encodeKlingTask({ ...view, status: "queued", url: null, externalTaskId: undefined }, "r") as {
    data: Record<string, unknown>
  }
  strictEqual(queued.data.task_status, "submitted")
  deepStrictEqual(queued.data.task_info, {})
  strictEqual(queued.data.task_result, undefined)
  const failed = encodeKlingTask({ ...view, status: "failed", statusMessage: "no", url: null }, "r") as {
    data: Record<string, unknown>
  }
  strictEqual(failed.data.task_status, "failed")
  strictEqual(failed.data.task_status_msg, "no")
})

Deno.test("kling envelope: errors carry Kling's status and code, and the field", () => {
  const problem = (status: number, code: string, param = "") => ({ status, type: "", code, message: "m", param })
  deepStrictEqual(klingErrorCode(problem(400, "invalid_request")), { status: 400, code: 1201 })
  deepStrictEqual(klingErrorCode(problem(401, "invalid_api_key")), { status: 401, code: 1000 })
  deepStrictEqual(klingErrorCode(problem(402, "insufficient_user_quota")), { status: 429, code: 1102 })
  deepStrictEqual(klingErrorCode(problem(429, "too_many_requests")), { status: 429, code: 1302 })
  deepStrictEqual(klingErrorCode(problem(404, "task_not_exist")), { status: 404, code: 1203 })
  deepStrictEqual(klingErrorCode(problem(503, "model_not_found")), { status: 404, code: 1203 })
  deepStrictEqual(klingErrorCode(problem(502, "upstream_error")), { status: 500, code: 5000 })
  deepStrictEqual(klingErrorCode(problem(504, "upstream_timeout")), { status: 504, code: 5002 })
  deepStrictEqual(encodeKlingError(problem(400, "invalid_request", "duration"), "r"), {
    code: 1201,
    message: "m",
    request_id: "r",
    param: "duration"
  })
  deepStrictEqual(encodeKlingError(problem(401, "invalid_api_key"), "r"), { code: 1000, message: "m", request_id: "r" })
})
