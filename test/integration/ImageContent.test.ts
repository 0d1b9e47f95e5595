/**
 * `response_format: "url"` on a model that answers only Base64 (GPT image
 * models): the gateway keeps the image and answers a URL of its own,
 * `GET /v1/images/content/{id}?token=…`, which a plain HTTP client fetches
 * without a key (the way clients read OpenAI's image URLs); the owner's
 * Bearer key reads it without the token; anyone else, a wrong token, or an
 * expired image gets 404, and expired rows are pruned. The async image task
 * (`POST /v1/images/generations/async`) answers the same URLs.
 *
 * The image is served as the type its bytes are, never the type the upstream
 * named: a hostile Gemini upstream that answers a script as
 * `inlineData.mimeType: "text/html"` gets it served as an
 * `application/octet-stream` attachment, a PNG it calls `text/html` is served
 * as `image/png`, and a stored row whose type says `text/html` is not
 * believed; every answer has `nosniff` and a sandboxing CSP.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { startGateway } from "../support/Gateway.ts"
import { SCRIPT_PAGE, startHostileUpstream } from "../support/HostileUpstream.ts"
import { IMAGE_KEY, imageClient, imageConfig, POOR_KEY } from "../support/ImageGateway.ts"
import { PNG } from "../support/MediaServer.ts"

Deno.test("image content: a url asked of a Base64-only model is a gateway URL that serves the image", async (t) => {
  const gateway = await startGateway({ config: imageConfig, store: "postgres" })
  const client = imageClient(gateway)
  try {
    const result = await client.images.generate({ model: "gpt-image-1", prompt: "a lamp", response_format: "url" })
    const url = result.data![0].url!
    strictEqual(result.data![0].b64_json, undefined)
    ok(url.startsWith(`${gateway.url}/v1/images/content/img_`) && url.includes("?token="), url)
    const id = new URL(url).pathname.split("/").at(-1)!

    await t.step("a plain fetch of the URL (no key) gets the PNG", async () => {
      const response = await fetch(url)
      strictEqual(response.status, 200)
      strictEqual(response.headers.get("content-type"), "image/png")
      deepStrictEqual([...new Uint8Array(await response.arrayBuffer()).slice(0, 4)], [0x89, 0x50, 0x4e, 0x47])
    })

    await t.step("the owner's key reads it without the token; another key, a wrong token or none do not", async () => {
      const bare = `${gateway.url}/v1/images/content/${id}`
      const owner = await fetch(bare, { headers: { authorization: `Bearer ${IMAGE_KEY}` } })
      strictEqual(owner.status, 200)
      await owner.body?.cancel()
      const other = await fetch(bare, { headers: { authorization: `Bearer ${POOR_KEY}` } })
      strictEqual(other.status, 404)
      strictEqual((await other.json()).error.code, "not_found")
      const wrong = await fetch(`${bare}?token=${"A".repeat(32)}`)
      strictEqual(wrong.status, 404)
      await wrong.body?.cancel()
      const none = await fetch(bare)
      strictEqual(none.status, 401)
      await none.body?.cancel()
      const malformed = await fetch(`${gateway.url}/v1/images/content/..%2F..%2Fetc?token=x`)
      strictEqual(malformed.status, 404)
      await malformed.body?.cancel()
    })

    await t.step("an expired image is 404, and its row is pruned by the next kept image", async () => {
      await gateway.query(`UPDATE image_contents SET expires_at = now() - interval '1 second' WHERE id = '${id}'`)
      const expired = await fetch(url)
      strictEqual(expired.status, 404)
      await expired.body?.cancel()
      await client.images.generate({ model: "gpt-image-1", prompt: "another lamp", response_format: "url" })
      strictEqual((await gateway.query(`SELECT id FROM image_contents WHERE id = '${id}'`)).length, 0)
    })

    await t.step("the async image task answers the same kind of URL once it completes", async () => {
      const submitted = await fetch(`${gateway.url}/v1/images/generations/async`, {
        method: "POST",
        headers: { authorization: `Bearer ${IMAGE_KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-image-1", prompt: "a lamp", response_format: "url" })
      })
      strictEqual(submitted.status, 200)
      const { id: taskId } = await submitted.json()
      let task: { status?: string; data?: Array<{ url?: string; b64_json?: string }> } = {}
      for (let tries = 0; tries < 300 && task.status !== "completed" && task.status !== "failed"; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        const response = await fetch(`${gateway.url}/v1/images/generations/async/${taskId}`, {
          headers: { authorization: `Bearer ${IMAGE_KEY}` }
        })
        task = await response.json()
      }
      strictEqual(task.status, "completed")
      const kept = task.data![0]
      strictEqual(kept.b64_json, undefined)
      ok(kept.url!.startsWith(`${gateway.url}/v1/images/content/img_`) && kept.url!.includes("?token="), kept.url!)
      const image = await fetch(kept.url!)
      strictEqual(image.status, 200)
      deepStrictEqual([...new Uint8Array(await image.arrayBuffer()).slice(0, 4)], [0x89, 0x50, 0x4e, 0x47])
    })

    await t.step("b64_json and upstream URLs are answered as before, nothing kept", async () => {
      const [{ count: before }] = await gateway.query<{ count: string }>(
        "SELECT count(*)::text AS count FROM image_contents"
      )
      const b64 = await client.images.generate({ model: "gpt-image-1", prompt: "a lamp", response_format: "b64_json" })
      ok(b64.data![0].b64_json!.length > 0)
      const dallE = await client.images.generate({ model: "dall-e-2", prompt: "a lamp", size: "256x256" })
      ok(dallE.data![0].url!.includes("/_emulator/images/"))
      const [{ count: after }] = await gateway.query<{ count: string }>(
        "SELECT count(*)::text AS count FROM image_contents"
      )
      strictEqual(after, before)
    })
  } finally {
    await gateway.close()
  }
})

/** A gateway whose `gemini-image` model runs on `upstreamUrl` (a Gemini image wire), for alice's `IMAGE_KEY`. */
const hostileImageConfig = (upstreamUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "gemini-image": { per_image: 0.039 } },
      channels: [{
        name: "hostile-gemini",
        type: "gemini",
        base_url: upstreamUrl,
        keys: ["sk-test-up-hostile-gemini"],
        models: ["gemini-image"]
      }],
      users: [{
        username: "alice",
        group: "default",
        quota: 100_000_000,
        tokens: [{ name: "main", key: IMAGE_KEY }]
      }]
    }),
    "hostile-images.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

Deno.test("image content: served as the type its bytes are, never the upstream's; nosniff and a sandboxing CSP", async () => {
  const upstream = startHostileUpstream()
  const gateway = await startGateway({ config: () => hostileImageConfig(upstream.url), store: "postgres" })
  const client = imageClient(gateway)
  const keptUrl = async (): Promise<string> => {
    const result = await client.images.generate({ model: "gemini-image", prompt: "a lamp", response_format: "url" })
    const url = result.data![0].url!
    ok(url.startsWith(`${gateway.url}/v1/images/content/img_`), url)
    return url
  }
  const safeHeaders = (response: Response) => {
    strictEqual(response.headers.get("x-content-type-options"), "nosniff")
    strictEqual(response.headers.get("content-security-policy"), "default-src 'none'; sandbox")
  }
  try {
    // A script the upstream calls text/html: bytes to download, never a page.
    const scriptUrl = await keptUrl()
    const script = await fetch(scriptUrl)
    strictEqual(script.status, 200)
    strictEqual(script.headers.get("content-type"), "application/octet-stream")
    strictEqual(script.headers.get("content-disposition"), "attachment")
    safeHeaders(script)
    deepStrictEqual(new Uint8Array(await script.arrayBuffer()), SCRIPT_PAGE)

    // A real PNG the upstream calls text/html: an image/png.
    upstream.behaviour.imageBytes = PNG
    const pngUrl = await keptUrl()
    const png = await fetch(pngUrl)
    strictEqual(png.headers.get("content-type"), "image/png")
    strictEqual(png.headers.get("content-disposition"), null)
    safeHeaders(png)
    deepStrictEqual(new Uint8Array(await png.arrayBuffer()), PNG)
    const stored = await gateway.query<{ media_type: string }>(
      "SELECT media_type FROM image_contents ORDER BY created_at"
    )
    deepStrictEqual(stored.map((row) => row.media_type), ["application/octet-stream", "image/png"], "kept as sniffed")

    // Rows that say text/html (kept before this release, or written by anyone) are not believed: the bytes decide.
    await gateway.query("UPDATE image_contents SET media_type = 'text/html'")
    const rewrittenScript = await fetch(scriptUrl)
    strictEqual(rewrittenScript.headers.get("content-type"), "application/octet-stream")
    strictEqual(rewrittenScript.headers.get("content-disposition"), "attachment")
    safeHeaders(rewrittenScript)
    await rewrittenScript.body?.cancel()
    const rewrittenPng = await fetch(pngUrl)
    strictEqual(rewrittenPng.headers.get("content-type"), "image/png")
    safeHeaders(rewrittenPng)
    await rewrittenPng.body?.cancel()
  } finally {
    await gateway.close()
    await upstream.close()
  }
})
