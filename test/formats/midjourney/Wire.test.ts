/**
 * The Midjourney-proxy wire as plain values: submit bodies decoded with the
 * field named on every refusal, the proxy's codes read, hostile task objects
 * bounded, the public task object and the error envelope.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { UpstreamFailed } from "../../../src/errors/GatewayError.ts"
import {
  actionOfCustomId,
  classifyMjError,
  decodeMjSubmit,
  decodeMjSubmitAnswer,
  decodeMjTask,
  encodeMjError,
  encodeMjSubmit,
  encodeMjTask,
  modelOfAction
} from "../../../src/formats/midjourney/Wire.ts"

const IMAGE = "data:image/png;base64,iVBORw0KGgo="

const paramOf = (kind: Parameters<typeof decodeMjSubmit>[0], body: Record<string, unknown>) => {
  const decoded = decodeMjSubmit(kind, body)
  return Result.isSuccess(decoded) ? undefined : decoded.failure.param
}

Deno.test("mj wire: each action is billed by its mj_<action> model; modal-opening actions as mj_modal", () => {
  strictEqual(modelOfAction("IMAGINE"), "mj_imagine")
  strictEqual(modelOfAction("UPSCALE"), "mj_upscale")
  strictEqual(modelOfAction("HIGH_VARIATION"), "mj_high_variation")
  strictEqual(modelOfAction("INPAINT"), "mj_modal")
  strictEqual(modelOfAction("CUSTOM_ZOOM"), "mj_modal")
  strictEqual(actionOfCustomId("MJ::JOB::upsample::2::3dbbd469-36af-4a0f-8f02-df6c579e7011"), "UPSCALE")
  strictEqual(actionOfCustomId("MJ::Outpaint::75::1::h::SOLO"), "ZOOM")
  strictEqual(actionOfCustomId("MJ::Job::PicReader::1"), undefined)
  strictEqual(actionOfCustomId(""), undefined)
})

Deno.test("mj wire: submit bodies are decoded with the offending field named", () => {
  strictEqual(paramOf("imagine", {}), "prompt")
  strictEqual(paramOf("imagine", { prompt: "   " }), "prompt")
  strictEqual(paramOf("imagine", { prompt: "x", base64Array: [IMAGE, "data:text/html;base64,PGI+"] }), "base64Array[1]")
  strictEqual(paramOf("imagine", { prompt: "x", base64Array: Array(6).fill(IMAGE) }), "base64Array")
  strictEqual(paramOf("imagine", { prompt: "x", state: { no: 1 } }), "state")
  strictEqual(paramOf("blend", { base64Array: [IMAGE, IMAGE], dimensions: "WIDE" }), "dimensions")
  strictEqual(paramOf("describe", { base64: IMAGE.replace("image/png", "image/png\n") }), "base64")
  strictEqual(paramOf("change", { taskId: "t".repeat(101), action: "UPSCALE", index: 1 }), "taskId")
  strictEqual(paramOf("change", { taskId: "t", action: "VARIATION", index: 1.5 }), "index")
  strictEqual(paramOf("action", { taskId: "t", customId: `MJ::JOB::upsample::1::${"h".repeat(200)}` }), "customId")
  strictEqual(paramOf("modal", { taskId: "t", prompt: 3 }), "prompt")
  strictEqual(paramOf("simple-change", { content: "mj_1 U5" }), "content")
  strictEqual(paramOf("simple-change", { content: 12 }), "content")
  const simple = decodeMjSubmit("simple-change", { content: "mj_abc v3" })
  ok(Result.isSuccess(simple))
  deepStrictEqual(simple.success, {
    kind: "change",
    state: undefined,
    botType: undefined,
    taskId: "mj_abc",
    action: "VARIATION",
    index: 3
  })
  const reroll = decodeMjSubmit("simple-change", { content: "mj_abc R" })
  ok(Result.isSuccess(reroll) && reroll.success.kind === "change" && reroll.success.action === "REROLL")
  const imagine = decodeMjSubmit("imagine", { prompt: "cat", notifyHook: "http://169.254.169.254/", botType: null })
  ok(Result.isSuccess(imagine))
  // The caller's hook is never forwarded; the upstream gets its own task id in place of ours.
  deepStrictEqual(encodeMjSubmit(imagine.success, undefined), { path: "/mj/submit/imagine", body: { prompt: "cat" } })
  const change = decodeMjSubmit("change", { taskId: "mj_public", action: "REROLL", state: "s" })
  ok(Result.isSuccess(change))
  deepStrictEqual(encodeMjSubmit(change.success, "1234567890123456"), {
    path: "/mj/submit/change",
    body: { taskId: "1234567890123456", action: "REROLL", state: "s" }
  })
})

Deno.test("mj wire: the proxy's codes — 1/21/22 accepted, 4 and 24 the caller's, 23 throttled, others the upstream's", () => {
  deepStrictEqual(decodeMjSubmitAnswer({ code: 1, result: "1320098173412546" }, 1), {
    upstreamId: "1320098173412546",
    code: 1
  })
  deepStrictEqual(decodeMjSubmitAnswer({ code: 22, result: "7" }, 1), { upstreamId: "7", code: 22 })
  const kindOf = (json: unknown) => {
    const decoded = decodeMjSubmitAnswer(json, 1)
    return decoded instanceof UpstreamFailed ? decoded.kind : "accepted"
  }
  strictEqual(kindOf({ code: 4, description: "prompt cannot be empty" }), "rejected")
  strictEqual(kindOf({ code: 24, description: "banned", properties: { bannedWord: "x" } }), "rejected")
  strictEqual(kindOf({ code: 23 }), "throttled")
  strictEqual(kindOf({ code: 3 }), "server")
  strictEqual(kindOf({ code: 9 }), "server")
  strictEqual(kindOf({ code: 1, result: "../../etc" }), "bad-body")
  strictEqual(kindOf(null), "bad-body")
  const secret = decodeMjSubmitAnswer({ code: 4, description: "bad key sk-live-abcdefghijklmnopqrstuvwxyz012345" }, 1)
  ok(secret instanceof UpstreamFailed && !secret.message.includes("abcdefghijklmnop"), "secrets masked")
  strictEqual(classifyMjError(401, "").kind, "unauthorized")
  strictEqual(classifyMjError(429, "").kind, "throttled")
  strictEqual(classifyMjError(502, "<html>").kind, "server")
  strictEqual(classifyMjError(400, JSON.stringify({ code: 23 })).kind, "throttled")
  strictEqual(classifyMjError(404, "not json").kind, "rejected")
})

Deno.test("mj wire: a hostile task object is read bounded; the image URL is kept private and only on success", () => {
  const buttons = Array.from({ length: 500 }, (_, index) => ({
    customId: index === 0 ? "javascript:alert(1)" : `MJ::JOB::upsample::1::${index}`,
    emoji: "🔄".repeat(100),
    label: "\u0000U1",
    type: 2,
    style: 2
  }))
  const poll = decodeMjTask({
    status: "SUCCESS",
    progress: "100%",
    imageUrl: "https://cdn.example/x.png",
    prompt: "p".repeat(20_000),
    buttons,
    properties: { finalPrompt: 7 }
  })!
  strictEqual(poll.status, "completed")
  strictEqual(poll.progress, 100)
  strictEqual(poll.imageUrl, "https://cdn.example/x.png")
  strictEqual(poll.detail.buttons.length, 49, "at most 50 kept, the unknown customId dropped")
  ok(poll.detail.buttons[0].emoji.length <= 20)
  ok(!poll.detail.buttons[0].label.includes("\u0000"))
  ok(poll.detail.prompt.length <= 8192)
  strictEqual(poll.detail.finalPrompt, "")
  strictEqual(decodeMjTask({ status: "IN_PROGRESS", progress: "250%", imageUrl: "https://preview" })!.progress, 99)
  strictEqual(decodeMjTask({ status: "IN_PROGRESS", imageUrl: "https://preview" })!.imageUrl, undefined)
  strictEqual(decodeMjTask({ status: "SUCCESS", imageUrl: "javascript:alert(1)" })!.imageUrl, undefined)
  strictEqual(decodeMjTask({ status: "MODAL" })!.status, "queued")
  strictEqual(decodeMjTask({ status: "CANCEL" })!.status, "failed")
  strictEqual(decodeMjTask({ status: "SOMETHING_NEW" })!.status, "in_progress")
  strictEqual(decodeMjTask(null), undefined)
  strictEqual(decodeMjTask([]), undefined)
})

Deno.test("mj wire: the public task object and the error envelope", () => {
  const object = encodeMjTask({
    id: "mj_0123",
    action: "IMAGINE",
    customId: "",
    botType: "MID_JOURNEY",
    prompt: "cat",
    state: "s",
    status: "in_progress",
    progress: 45.6,
    submitTime: 1000,
    finishTime: null,
    imageUrl: "",
    failReason: "",
    detail: undefined
  })
  deepStrictEqual(
    [object.id, object.status, object.progress, object.prompt, object.promptEn, object.buttons],
    ["mj_0123", "IN_PROGRESS", "46%", "cat", "cat", []]
  )
  deepStrictEqual(
    encodeMjError({
      status: 400,
      type: "invalid_request_error",
      code: "invalid_request",
      message: "m",
      param: "prompt"
    }),
    { code: 4, description: "m", result: null, properties: {}, type: "invalid_request", param: "prompt" }
  )
  strictEqual(encodeMjError({ status: 404, type: "", code: "task_not_exist", message: "", param: "" }).code, 3)
  strictEqual(encodeMjError({ status: 429, type: "", code: "too_many_requests", message: "", param: "" }).code, 23)
  strictEqual(encodeMjError({ status: 502, type: "", code: "upstream_error", message: "", param: "" }).code, 9)
})

Deno.test("property: the decoders take any JSON without throwing, and what they accept stays bounded", () => {
  const kinds = ["imagine", "change", "simple-change", "action", "modal", "blend", "describe"] as const
  fc.assert(
    fc.property(fc.constantFrom(...kinds), fc.dictionary(fc.string(), fc.jsonValue()), (kind, body) => {
      const decoded = decodeMjSubmit(kind, body)
      if (Result.isFailure(decoded)) {
        return typeof decoded.failure.param === "string" && decoded.failure.param.length > 0
      }
      return JSON.stringify(encodeMjSubmit(decoded.success, "1").body).length <= JSON.stringify(body).length + 64
    }),
    { numRuns: 500 }
  )
  fc.assert(
    fc.property(fc.jsonValue(), (json) => {
      const poll = decodeMjTask(json)
      const answer = decodeMjSubmitAnswer(json, 1)
      return (poll === undefined || (poll.progress >= 0 && poll.progress <= 100)) &&
        (answer instanceof UpstreamFailed || /^[A-Za-z0-9._-]{1,100}$/.test(answer.upstreamId))
    }),
    { numRuns: 500 }
  )
})
