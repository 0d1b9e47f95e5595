/**
 * Media a hostile upstream answers, opened in a real headless Chromium
 * (Debian's `chromium`, driven by `playwright-core`) by root, signed in to the
 * console: the upstream answers an "image" (Gemini `inlineData.mimeType:
 * "text/html"`) and a video (`Content-Type: text/html`) that are a page whose
 * script would mark the page and read `/api/user/self` with root's session.
 * Opening the image content URL (a link alice made) and the video content URL
 * (root's own task) runs no script: the title stays, no `window` flag is set
 * and no request for `/api/user/self` leaves the browser. The bytes are a
 * download (`application/octet-stream`, attachment), never a page of the
 * gateway's origin.
 */
import { Result } from "effect"
import { ok, strictEqual } from "node:assert/strict"
import { chromium } from "playwright-core"
import { CHROMIUM, pageCall } from "../support/Chromium.ts"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"
import { startHostileUpstream } from "../support/HostileUpstream.ts"
import { IMAGE_KEY, imageClient } from "../support/ImageGateway.ts"

/** Debian's chromium, or the one named by `SLUICE_CHROMIUM`. */

/** Free image and video models on the hostile upstream; alice's key. */
const config = (upstreamUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "gemini-image": { free: true }, "sora-2": { free: true } },
      channels: [
        {
          name: "hostile-gemini",
          type: "gemini",
          base_url: upstreamUrl,
          keys: ["sk-test-up-hostile-gemini"],
          models: ["gemini-image"]
        },
        {
          name: "hostile-openai",
          type: "openai",
          base_url: upstreamUrl,
          keys: ["sk-test-up-hostile-openai"],
          models: ["sora-2"]
        }
      ],
      users: [{ username: "alice", group: "default", quota: 100_000_000, tokens: [{ name: "main", key: IMAGE_KEY }] }],
      settings: { task_poll_interval_ms: 100 }
    }),
    "hostile-browser.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

Deno.test("media in a browser: a hostile upstream's script, opened by root at the image and video content URLs, never runs", async () => {
  const upstream = startHostileUpstream()
  const gateway = await startGateway({ config: () => config(upstream.url) })
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
  try {
    const context = await browser.newContext({ acceptDownloads: true })
    const requested: Array<string> = []
    context.on("request", (request) => requested.push(new URL(request.url()).pathname))

    // Root signs in from a page of the gateway's origin; the session cookie is the browser's.
    const home = await context.newPage()
    await home.goto(`${gateway.url}/healthz`)
    strictEqual(
      (await pageCall(home, "POST", "/api/user/login", { username: "root", password: ROOT_PASSWORD })).status,
      200
    )
    ok((await context.cookies()).some((cookie) => cookie.name === "sluice_session"), "root's session cookie")

    // The link: an image alice had generated (its URL carries its token), the hostile upstream's script inside.
    const image = await imageClient(gateway).images.generate({
      model: "gemini-image",
      prompt: "a lamp",
      response_format: "url"
    })
    const imageUrl = image.data![0].url!
    // Root's own video on the hostile vendor, submitted with the session as the playground does.
    const submitted = await pageCall(home, "POST", "/v1/videos", { model: "sora-2", prompt: "a lake", seconds: "4" })
    strictEqual(submitted.status, 200, JSON.stringify(submitted.json))
    const videoId = String(submitted.json.id)
    for (let tries = 0; tries < 100; tries++) {
      if ((await pageCall(home, "GET", `/v1/videos/${videoId}`)).json.status === "completed") break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const videoUrl = `${gateway.url}/v1/videos/${videoId}/content`
    // The session reads the video route (so a script served from it would run with root's rights).
    strictEqual((await pageCall(home, "GET", `/v1/videos/${videoId}`)).json.status, "completed")

    for (const [what, url] of [["image", imageUrl], ["video", videoUrl]] as const) {
      const before = requested.filter((path) => path === "/api/user/self").length
      const page = await context.newPage()
      const download = page.waitForEvent("download", { timeout: 10_000 })
      // An attachment is a download, which ends the navigation: goto fails, and the download starts.
      const navigation = await page.goto(url).then(() => "rendered", (error: Error) => error.message)
      const saved = await download.then((started) => started.failure(), () => "no download")
      await page.waitForTimeout(300)
      ok(await page.title() !== "pwned", `${what}: no script changed the title (${navigation})`)
      strictEqual(await page.evaluate("typeof window.pwned"), "undefined", `${what}: no script ran`)
      strictEqual(
        requested.filter((path) => path === "/api/user/self").length,
        before,
        `${what}: no request with root's session left the page`
      )
      strictEqual(saved, null, `${what}: the bytes were a download, not a page (${navigation})`)
      await page.close()
    }
  } finally {
    await browser.close()
    await gateway.close()
    await upstream.close()
  }
})
