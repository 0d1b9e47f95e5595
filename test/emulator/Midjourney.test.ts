/**
 * The emulator's Midjourney-proxy API through plain `fetch` (there is no
 * official SDK): codes of the submit answers, a task moving from SUBMITTED to
 * SUCCESS with its buttons, a button's action, the modal of a Vary (Region),
 * blend and describe, list-by-condition, the image bytes, and the key check.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { startEmulator } from "../../emulator/Emulator.ts"
import { actionOfCustomId } from "../../emulator/Midjourney.ts"

const SECRET = "sk-test-mj-secret"
const DATA_URI = "data:image/png;base64,iVBORw0KGgo="

const client = (url: string, secret = SECRET) => ({
  post: async (path: string, body: unknown) => {
    const response = await fetch(url + path, {
      method: "POST",
      headers: { "content-type": "application/json", "mj-api-secret": secret },
      body: JSON.stringify(body)
    })
    return { status: response.status, body: await response.json() }
  },
  task: async (id: string) => {
    const response = await fetch(`${url}/mj/task/${id}/fetch`, { headers: { "mj-api-secret": secret } })
    return { status: response.status, body: await response.json() }
  }
})

const until = async (read: () => Promise<{ body: { status: string } }>, status: string) => {
  for (let tries = 0; tries < 100; tries++) {
    const task = await read()
    if (task.body.status === status) return task.body as Record<string, unknown>
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`The task never reached ${status}.`)
}

Deno.test("emulator midjourney: imagine moves SUBMITTED → IN_PROGRESS → SUCCESS with U/V/reroll buttons; upscale by customId", async () => {
  const emulator = startEmulator({ videoStepMs: 40, validKeys: [SECRET] })
  try {
    const mj = client(emulator.url)
    const submit = await mj.post("/mj/submit/imagine", { prompt: "a lighthouse", state: "mine" })
    strictEqual(submit.status, 200)
    strictEqual(submit.body.code, 1)
    ok(/^\d{16}$/.test(submit.body.result), submit.body.result)
    const first = await mj.task(submit.body.result)
    strictEqual(first.body.status, "SUBMITTED")
    strictEqual(first.body.progress, "0%")
    const running = await until(() => mj.task(submit.body.result), "IN_PROGRESS")
    ok(String(running.imageUrl).includes("preview"), "a preview while running")
    const done = await until(() => mj.task(submit.body.result), "SUCCESS")
    strictEqual(done.progress, "100%")
    strictEqual(done.action, "IMAGINE")
    strictEqual(done.state, "mine")
    const buttons = done.buttons as Array<{ customId: string; label: string; emoji: string }>
    deepStrictEqual(buttons.map((button) => button.label), ["U1", "U2", "U3", "U4", "", "V1", "V2", "V3", "V4"])
    strictEqual(buttons[4].emoji, "🔄")
    const image = await fetch(String(done.imageUrl))
    strictEqual(image.headers.get("content-type"), "image/png")
    strictEqual((await image.bytes())[1], 0x50)

    const upscale = await mj.post("/mj/submit/action", { taskId: submit.body.result, customId: buttons[0].customId })
    strictEqual(upscale.body.code, 1)
    const upscaled = await until(() => mj.task(upscale.body.result), "SUCCESS")
    strictEqual(upscaled.action, "UPSCALE")
    const upscaleButtons = upscaled.buttons as Array<{ customId: string; label: string }>
    ok(upscaleButtons.some((button) => button.label === "Vary (Region)"))

    // Vary (Region) opens a modal: code 21, MODAL until the modal is submitted.
    const region = upscaleButtons.find((button) => button.label === "Vary (Region)")!
    const modal = await mj.post("/mj/submit/action", { taskId: upscale.body.result, customId: region.customId })
    strictEqual(modal.body.code, 21)
    strictEqual((await mj.task(modal.body.result)).body.status, "MODAL")
    const confirmed = await mj.post("/mj/submit/modal", { taskId: modal.body.result, maskBase64: DATA_URI })
    strictEqual(confirmed.body.code, 1)
    strictEqual(confirmed.body.result, modal.body.result)
    strictEqual((await until(() => mj.task(modal.body.result), "SUCCESS")).action, "INPAINT")
    strictEqual((await mj.post("/mj/submit/modal", { taskId: modal.body.result })).body.code, 4)

    const listed = await mj.post("/mj/task/list-by-condition", { ids: [upscale.body.result, "0000", 7] })
    deepStrictEqual(listed.body.map((task: { id: string }) => task.id), [upscale.body.result])
  } finally {
    await emulator.close()
  }
})

Deno.test("emulator midjourney: validation is code 4 at HTTP 200, marker words choose 21/22/23/24 and FAILURE", async () => {
  const emulator = startEmulator({ videoStepMs: 20 })
  try {
    const mj = client(emulator.url)
    strictEqual((await mj.post("/mj/submit/imagine", { prompt: " " })).body.code, 4)
    strictEqual((await mj.post("/mj/submit/imagine", { prompt: "x", base64Array: ["nope"] })).body.code, 4)
    strictEqual((await mj.post("/mj/submit/blend", { base64Array: [DATA_URI] })).body.code, 4)
    strictEqual((await mj.post("/mj/submit/describe", {})).body.code, 4)
    strictEqual((await mj.post("/mj/submit/change", { taskId: "1", action: "UPSCALE", index: 1 })).body.code, 3)
    strictEqual((await mj.post("/mj/submit/action", { taskId: "1", customId: "nonsense" })).body.code, 4)
    const banned = await mj.post("/mj/submit/imagine", { prompt: "banned words" })
    strictEqual(banned.status, 200)
    strictEqual(banned.body.code, 24)
    strictEqual((await mj.post("/mj/submit/imagine", { prompt: "busy now" })).body.code, 23)
    const queued = await mj.post("/mj/submit/imagine", { prompt: "queued please" })
    strictEqual(queued.body.code, 22)
    ok(queued.body.result)
    const broken = await mj.post("/mj/submit/imagine", { prompt: "a broken thing" })
    const failed = await until(() => mj.task(broken.body.result), "FAILURE")
    ok(String(failed.failReason).length > 0)
    deepStrictEqual(failed.buttons, [])

    const blend = await mj.post("/mj/submit/blend", { base64Array: [DATA_URI, DATA_URI], dimensions: "PORTRAIT" })
    strictEqual((await until(() => mj.task(blend.body.result), "SUCCESS")).action, "BLEND")
    const describe = await mj.post("/mj/submit/describe", { base64: DATA_URI })
    const described = await until(() => mj.task(describe.body.result), "SUCCESS")
    ok(String(described.prompt).includes("1️⃣"))
    const change = await mj.post("/mj/submit/change", { taskId: blend.body.result, action: "VARIATION", index: 2 })
    strictEqual((await until(() => mj.task(change.body.result), "SUCCESS")).action, "VARIATION")
    strictEqual((await mj.task("404")).status, 404)
  } finally {
    await emulator.close()
  }
})

Deno.test("emulator midjourney: a wrong mj-api-secret is refused in the proxy's shape; a Bearer header is not the secret", async () => {
  const emulator = startEmulator({ validKeys: [SECRET] })
  try {
    const wrong = await client(emulator.url, "sk-test-wrong").post("/mj/submit/imagine", { prompt: "x" })
    strictEqual(wrong.status, 401)
    strictEqual(wrong.body.code, 4)
    const bearer = await fetch(`${emulator.url}/mj/submit/imagine`, {
      method: "POST",
      headers: { authorization: `Bearer ${SECRET}`, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "x" })
    })
    strictEqual(bearer.status, 401)
    await bearer.body?.cancel()
  } finally {
    await emulator.close()
  }
})

Deno.test("emulator midjourney: a customId names its action as new-api reads it", () => {
  strictEqual(actionOfCustomId("MJ::JOB::upsample::2::3dbbd469-36af-4a0f-8f02-df6c579e7011"), "UPSCALE")
  strictEqual(actionOfCustomId("MJ::JOB::upsample_v6_2x_subtle::1::h::SOLO"), "UPSCALE")
  strictEqual(actionOfCustomId("MJ::JOB::variation::1::h"), "VARIATION")
  strictEqual(actionOfCustomId("MJ::JOB::low_variation::1::h::SOLO"), "LOW_VARIATION")
  strictEqual(actionOfCustomId("MJ::JOB::reroll::0::h::SOLO"), "REROLL")
  strictEqual(actionOfCustomId("MJ::Outpaint::50::1::h::SOLO"), "ZOOM")
  strictEqual(actionOfCustomId("MJ::CustomZoom::h"), "CUSTOM_ZOOM")
  strictEqual(actionOfCustomId("MJ::Inpaint::1::h::SOLO"), "INPAINT")
  strictEqual(actionOfCustomId("MJ::JOB::pan_left::1::h::SOLO"), "PAN")
  strictEqual(actionOfCustomId("XX::JOB::upsample::1"), undefined)
})
