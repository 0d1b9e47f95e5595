/**
 * The first video family's error variants on `POST /v1/videos` (spec
 * "Errors"): no balance `{error: {message, type: insufficient_quota}}`, a rate
 * limit `{error: {message, type: rate_limit_exceeded}}`, an upstream failure
 * the flat `{code: do_request_failed, message}`, an invalid token an error of
 * type `invalid_request_error`; and the unified submit's rate limit in the
 * flat `{code, message, data: null}`. None of them charges anything.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { ALICE, LIMITED, POOR, startVideoGateway, usageOf, videoCostOf } from "../support/VideoGateway.ts"

const post = (url: string, key: string, body: unknown) =>
  fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

const VIDEOA = { model: "videoa-2-0-260128", prompt: "a lighthouse at dusk", duration: 5 }

Deno.test("videoa errors: quota, rate limit, upstream failure and bad key in the spec's variants", async () => {
  const gateway = await startVideoGateway()
  try {
    const videos = `${gateway.url}/v1/videos`

    const poor = await post(videos, POOR, VIDEOA)
    strictEqual(poor.status, 402)
    const poorBody = await poor.json()
    deepStrictEqual(Object.keys(poorBody.error).sort(), ["message", "type"])
    strictEqual(poorBody.error.type, "insufficient_quota")

    gateway.emulator.setFaults([{ match: { model: "vendor-video-a" }, status: 500 }])
    const failed = await post(videos, ALICE, VIDEOA)
    strictEqual(failed.status, 500)
    const failedBody = await failed.json()
    deepStrictEqual(Object.keys(failedBody).sort(), ["code", "message"])
    strictEqual(failedBody.code, "do_request_failed")
    gateway.emulator.clearFaults()

    const badKey = await post(videos, "sk-test-not-a-key-000", VIDEOA)
    strictEqual(badKey.status, 401)
    const badKeyBody = await badKey.json()
    strictEqual(badKeyBody.error.type, "invalid_request_error")
    strictEqual(badKeyBody.error.code, "invalid_api_key")

    const first = await post(videos, LIMITED, VIDEOA)
    strictEqual(first.status, 200)
    const limited = await post(videos, LIMITED, VIDEOA)
    strictEqual(limited.status, 429)
    const limitedBody = await limited.json()
    deepStrictEqual(Object.keys(limitedBody.error).sort(), ["message", "type"])
    strictEqual(limitedBody.error.type, "rate_limit_exceeded")

    const unified = await post(`${gateway.url}/v1/video/generations`, LIMITED, { model: "sora-2", prompt: "a kite" })
    strictEqual(unified.status, 429)
    const unifiedBody = await unified.json()
    deepStrictEqual(Object.keys(unifiedBody).sort(), ["code", "data", "message"])
    strictEqual(unifiedBody.code, "too_many_requests")
    strictEqual(unifiedBody.data, null)

    strictEqual((await usageOf(gateway)).used, 0)
    strictEqual((await usageOf(gateway, POOR)).used, 0)
    strictEqual((await usageOf(gateway, LIMITED)).used, videoCostOf(5))
  } finally {
    await gateway.close()
  }
})
