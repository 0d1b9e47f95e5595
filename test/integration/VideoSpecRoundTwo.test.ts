/**
 * What strict clients tripped on in the video routes (the spec's round two),
 * end to end against the emulator: media fields take a public `http://` URL
 * as well as `https://`, and a URL whose host is loopback, private or
 * link-local is refused naming the field before any vendor call or charge;
 * the first family's `duration` takes the vendor's values (whole 4–15) and
 * says which; the unified route takes each family's own ratio field and
 * Base64 images, and refuses the first family's image + images; a remix naming another model than the original's is a 400
 * naming `model`; `HEAD /v1/videos/{id}/content` answers like GET without a
 * body; an accepted submit whose answer breaks off is 500 `bad_response`;
 * with `public_url` set, a video's content URL is built from it; the models
 * list labels video and image models with their own routes.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import {
  ALICE,
  BOB,
  eventually,
  startVideoGateway,
  usageOf,
  videoClient,
  videoCostOf
} from "../support/VideoGateway.ts"
import { PNG_DATA_URI } from "../support/VideoRules.ts"

const json = { authorization: `Bearer ${ALICE}`, "content-type": "application/json" }

Deno.test("video routes, round two: http media URLs, the first family's duration, remix model, HEAD content", async (t) => {
  const gateway = await startVideoGateway()
  const post = (path: string, body: unknown) =>
    fetch(`${gateway.url}${path}`, { method: "POST", headers: json, body: JSON.stringify(body) })
  const submits = () => gateway.emulator.requests.filter((request) => request.method === "POST").length
  try {
    await t.step("a public http:// image URL reaches the vendor as given", async () => {
      const image = "http://media.example.com/frame.png"
      const response = await post("/v1/videos", { model: "sora-2", prompt: "a kite", seconds: "4", image })
      strictEqual(response.status, 200, await response.clone().text())
      strictEqual((await response.json()).status, "queued")
      const sent = gateway.emulator.requests.findLast((request) =>
        request.method === "POST" && request.path === "/v1/videos"
      )
      deepStrictEqual((sent?.body as { input_reference?: unknown }).input_reference, { image_url: image })
      const unified = await post("/v1/video/generations", { model: "sora-2", prompt: "a kite", images: [image] })
      strictEqual(unified.status, 200, await unified.clone().text())
    })

    await t.step(
      "a loopback, private or link-local host is refused naming the field; no vendor call, no charge",
      async () => {
        const before = await usageOf(gateway)
        const calls = submits()
        for (
          const url of [
            "http://127.0.0.1/a.png",
            "http://localhost:8080/a.png",
            "http://10.1.2.3/a.png",
            "https://[::1]/a.png",
            "http://169.254.169.254/latest/meta-data/",
            "http://2130706433/a.png"
          ]
        ) {
          const openai = await post("/v1/videos", { model: "sora-2", prompt: "x", seconds: "4", image: url })
          strictEqual(openai.status, 400, url)
          const body = await openai.json()
          strictEqual(body.error.param, "image", url)
          ok(body.error.message.includes("blocked address"), body.error.message)

          const unified = await post("/v1/video/generations", {
            model: "sora-2",
            prompt: "x",
            images: ["http://media.example.com/ok.png", url]
          })
          strictEqual(unified.status, 400, url)
          strictEqual((await unified.json()).error.param, "images[1]", url)

          const videoa = await post("/v1/videos", { model: "videoa-2-0-260128", prompt: "x", first_image: url })
          strictEqual(videoa.status, 400, url)
          strictEqual((await videoa.json()).code, "invalid_request", url)
        }
        strictEqual(submits(), calls, "no vendor call")
        strictEqual((await usageOf(gateway)).used, before.used, "nothing charged")
      }
    )

    await t.step(
      "the first family's duration: whole seconds 4 to 15 taken, 5.5 refused naming the values",
      async () => {
        const before = await usageOf(gateway)
        const refused = await post("/v1/videos", { model: "videoa-2-0-260128", prompt: "a lighthouse", duration: 5.5 })
        strictEqual(refused.status, 400)
        const body = await refused.json()
        strictEqual(body.code, "invalid_request")
        ok(body.message.includes("from 4 to 15"), body.message)
        strictEqual((await usageOf(gateway)).used, before.used)

        const taken = await post("/v1/videos", { model: "videoa-2-0-260128", prompt: "a lighthouse", duration: 12 })
        strictEqual(taken.status, 200, await taken.clone().text())
        strictEqual((await taken.json()).seconds, "12")
        await eventually(async () => (await usageOf(gateway)).used - before.used === videoCostOf(12))
      }
    )

    await t.step(
      "unified route: mini-2.0's ratio and Base64 images reach the vendor; videoa's image + images is a 400",
      async () => {
        const png = PNG_DATA_URI.slice("data:image/png;base64,".length)
        const mini = await post("/v1/video/generations", {
          model: "mini-2.0",
          prompt: "a paper boat",
          duration: 5,
          ratio: "9:16",
          image: png
        })
        strictEqual(mini.status, 200, await mini.clone().text())
        const sent = gateway.emulator.requests.findLast((request) =>
          request.method === "POST" && request.path === "/v1/videos"
        )?.body as { size?: string; input_reference?: { image_url?: string } }
        strictEqual(sent.input_reference?.image_url, PNG_DATA_URI)
        const videoa = await post("/v1/video/generations", { model: "videoa-2-0-260128", prompt: "x", image: png })
        strictEqual(videoa.status, 200, await videoa.clone().text())

        const before = await usageOf(gateway)
        const calls = submits()
        const mixed = await post("/v1/video/generations", {
          model: "videoa-2-0-260128",
          prompt: "x",
          image: "https://media.example.com/first.png",
          images: ["https://media.example.com/ref.png"]
        })
        strictEqual(mixed.status, 400)
        strictEqual((await mixed.json()).error.param, "images")
        const disagree = await post("/v1/video/generations", {
          model: "mini-2.0",
          prompt: "x",
          duration: 5,
          size: "16:9",
          ratio: "9:16"
        })
        strictEqual(disagree.status, 400)
        strictEqual((await disagree.json()).error.param, "ratio")
        strictEqual(submits(), calls, "no vendor call")
        strictEqual((await usageOf(gateway)).used, before.used)
      }
    )

    await t.step(
      "an accepted submit whose answer breaks off: 500 bad_response, not tried elsewhere, nothing charged",
      async () => {
        const before = await usageOf(gateway)
        gateway.emulator.setFaults([{ match: { path: "/v1/videos", model: "sora-2" }, breakAfterEvents: 0, times: 1 }])
        const calls = submits()
        const response = await post("/v1/videos", { model: "sora-2", prompt: "a cut answer", seconds: "4" })
        strictEqual(response.status, 500)
        const body = await response.json()
        strictEqual(body.error.code, "bad_response")
        strictEqual(body.error.type, "platform_api_error")
        strictEqual(submits(), calls + 1, "one vendor call: the vendor may hold the task")
        // The first family answers it in its flat variant (spec: do_request_failed for an upstream failure).
        gateway.emulator.setFaults([{
          match: { path: "/v1/videos", model: "vendor-video-a" },
          breakAfterEvents: 0,
          times: 1
        }])
        const videoa = await post("/v1/videos", { model: "videoa-2-0-260128", prompt: "a cut answer", duration: 5 })
        strictEqual(videoa.status, 500)
        strictEqual((await videoa.json()).code, "do_request_failed")
        gateway.emulator.clearFaults()
        strictEqual((await usageOf(gateway)).used, before.used)
      }
    )

    const client = videoClient(gateway)
    const created = await client.videos.create({ model: "sora-2", prompt: "a calm lake", seconds: "4" })
    await eventually(async () => (await client.videos.retrieve(created.id)).status === "completed")

    await t.step("a remix naming another model than the original's: 400 naming model, nothing charged", async () => {
      const before = await usageOf(gateway)
      const calls = submits()
      const response = await post(`/v1/videos/${created.id}/remix`, { model: "veo-video", prompt: "at night" })
      strictEqual(response.status, 400)
      const body = await response.json()
      strictEqual(body.error.param, "model")
      ok(body.error.message.includes("sora-2"), body.error.message)
      strictEqual(submits(), calls)
      strictEqual((await usageOf(gateway)).used, before.used)
      // The original's own model, named or (as the SDK's remix sends it) not, still remixes.
      const named = await post(`/v1/videos/${created.id}/remix`, { model: "sora-2", prompt: "at night" })
      strictEqual(named.status, 200, await named.clone().text())
      const remixed = await client.videos.remix(created.id, { prompt: "at dawn" })
      strictEqual(remixed.remixed_from_video_id, created.id)
    })

    await t.step("HEAD content: GET's status and headers, no body; another user's task is 404", async () => {
      const url = `${gateway.url}/v1/videos/${created.id}/content`
      const get = await fetch(url, { headers: { authorization: `Bearer ${ALICE}` } })
      const bytes = new Uint8Array(await get.arrayBuffer())
      const head = await fetch(url, { method: "HEAD", headers: { authorization: `Bearer ${ALICE}` } })
      strictEqual(head.status, 200)
      strictEqual(head.headers.get("content-type"), "video/mp4")
      strictEqual(Number(head.headers.get("content-length")), bytes.length)
      strictEqual((await head.arrayBuffer()).byteLength, 0)
      const ranged = await fetch(url, {
        method: "HEAD",
        headers: { authorization: `Bearer ${ALICE}`, range: "bytes=0-3" }
      })
      strictEqual(ranged.status, 206)
      strictEqual(ranged.headers.get("content-range"), `bytes 0-3/${bytes.length}`)
      await ranged.body?.cancel()
      const foreign = await fetch(url, { method: "HEAD", headers: { authorization: `Bearer ${BOB}` } })
      strictEqual(foreign.status, 404)
      await foreign.body?.cancel()
    })
  } finally {
    await gateway.close()
  }
})

Deno.test("video routes: with settings.public_url the content URL is built from it; the models list labels video and image models", async () => {
  const gateway = await startVideoGateway({ settings: { public_url: "https://videos.example.com/gw/" } })
  try {
    const client = videoClient(gateway)
    const created = await client.videos.create({ model: "sora-2", prompt: "a harbour", seconds: "4" })
    let url = ""
    await eventually(async () => {
      const response = await fetch(`${gateway.url}/v1/videos/${created.id}`, {
        headers: { authorization: `Bearer ${ALICE}`, host: "internal:8080", "x-forwarded-proto": "http" }
      })
      const video = await response.json()
      url = video.url ?? ""
      return video.status === "completed"
    })
    strictEqual(url, `https://videos.example.com/gw/v1/videos/${created.id}/content`)
    const unified = await fetch(`${gateway.url}/v1/video/generations/${created.id}`, {
      headers: { authorization: `Bearer ${ALICE}` }
    })
    strictEqual((await unified.json()).data.url, url)
    // The models list labels each model with its real routes (from its price: per_second, per_image, tokens).
    const models = new Map((await client.models.list()).data.map((model) => [model.id, model]))
    const endpoints = (id: string) =>
      (models.get(id) as unknown as { supported_endpoints: Array<string> })
        .supported_endpoints
    deepStrictEqual(endpoints("sora-2"), ["/v1/videos", "/v1/video/generations"])
    deepStrictEqual(endpoints("dall-e-2"), [
      "/v1/images/generations",
      "/v1/images/edits",
      "/v1/images/generations/async"
    ])
    ok(endpoints("video-unpriced").includes("/v1/chat/completions"))
  } finally {
    await gateway.close()
  }
})
