/**
 * Every row of the video validation table (`test/support/VideoRules.ts`)
 * posted through the real routes: the status, the envelope (gateway
 * `{error: {message, type, param, code}}` or the first family's flat
 * `{code, message}`), the code and, for gateway rows, `param`; no row
 * charges any quota. The one exception (a remix without `model`, which the
 * official SDK sends) is asserted for what it does instead.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { VIDEO_RULES } from "../support/VideoRules.ts"
import { ALICE, startVideoGateway, usageOf } from "../support/VideoGateway.ts"

Deno.test("video rules: every rule of the table gets its 400 in its envelope through the routes", async () => {
  const gateway = await startVideoGateway()
  try {
    const failures: Array<string> = []
    // One row is answered otherwise on purpose: the official `openai` SDK's `videos.remix` sends only `prompt`,
    // so a remix without `model` takes the original task's model, and one naming no task of the caller's is 404.
    const sdkRemix = VIDEO_RULES.filter((rule) => rule.name === "remix: model missing")
    strictEqual(sdkRemix.length, 1)
    const remixed = await fetch(`${gateway.url}/v1/videos/video_${"0".repeat(32)}/remix`, {
      method: "POST",
      headers: { authorization: `Bearer ${ALICE}`, "content-type": "application/json" },
      body: JSON.stringify(sdkRemix[0].body)
    })
    strictEqual(remixed.status, 404)
    strictEqual((await remixed.json()).error.code, "task_not_exist")
    for (const rule of VIDEO_RULES.filter((rule) => !sdkRemix.includes(rule))) {
      // A remix names a task id the caller does not have: the body is judged before any lookup.
      const path = rule.route === "POST /v1/videos"
        ? "/v1/videos"
        : rule.route === "POST /v1/video/generations"
        ? "/v1/video/generations"
        : `/v1/videos/video_${"0".repeat(32)}/remix`
      const response = await fetch(gateway.url + path, {
        method: "POST",
        headers: { authorization: `Bearer ${ALICE}`, "content-type": "application/json" },
        body: JSON.stringify(rule.body)
      })
      const body = await response.json()
      const seen = rule.envelope === "flat"
        ? { status: response.status, code: body.code, message: typeof body.message, error: body.error }
        : {
          status: response.status,
          code: body.error?.code,
          param: body.error?.param,
          type: body.error?.type,
          message: typeof body.error?.message
        }
      const wanted = rule.envelope === "flat"
        ? { status: rule.status, code: rule.code, message: "string", error: undefined }
        : { status: rule.status, code: rule.code, param: rule.param, type: "invalid_request_error", message: "string" }
      try {
        deepStrictEqual(seen, wanted)
      } catch {
        failures.push(`${rule.name}: ${JSON.stringify(seen)} (wanted ${JSON.stringify(wanted)})`)
      }
    }
    strictEqual(failures.length, 0, failures.join("\n"))
    ok(VIDEO_RULES.length > 50)
    strictEqual((await usageOf(gateway)).used, 0)
  } finally {
    await gateway.close()
  }
})
