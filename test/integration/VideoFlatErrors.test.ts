/**
 * The first video family's flat answers on `POST /v1/videos` and its remix
 * (spec "Errors", first-video-family variants): an unknown original of a
 * remix is 404 `{code: task_not_exist, message}` and an unknown model 503
 * `{code: model_not_found, message}`, both flat, with nothing charged; the
 * same failures of another family are in the gateway envelope.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { ALICE, startVideoGateway, usageOf } from "../support/VideoGateway.ts"

Deno.test("videoa: a remix of an unknown task is a flat 404, an unknown model a flat 503; others in the envelope", async () => {
  const gateway = await startVideoGateway()
  const post = (path: string, body: unknown) =>
    fetch(`${gateway.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ALICE}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
  try {
    const before = await usageOf(gateway)
    const remix = await post("/v1/videos/video_unknown0000000000000000000000000/remix", {
      model: "videoa-2-0-260128",
      prompt: "again"
    })
    strictEqual(remix.status, 404)
    const remixBody = await remix.json()
    deepStrictEqual(Object.keys(remixBody).sort(), ["code", "message"])
    strictEqual(remixBody.code, "task_not_exist")

    const unknown = await post("/v1/videos", { model: "videoa-9-9-999999", prompt: "a lighthouse", duration: 5 })
    strictEqual(unknown.status, 503)
    const unknownBody = await unknown.json()
    deepStrictEqual(Object.keys(unknownBody).sort(), ["code", "message"])
    strictEqual(unknownBody.code, "model_not_found")

    const generic = await post("/v1/videos", { model: "no-such-video-model", prompt: "a lighthouse" })
    strictEqual(generic.status, 503)
    strictEqual((await generic.json()).error.code, "model_not_found")
    strictEqual((await usageOf(gateway)).used, before.used)
  } finally {
    await gateway.close()
  }
})
