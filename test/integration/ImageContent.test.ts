/**
 * `response_format: "url"` on a model that answers only Base64 (GPT image
 * models): the gateway keeps the image and answers a URL of its own,
 * `GET /v1/images/content/{id}?token=…`, which a plain HTTP client fetches
 * without a key (the way clients read OpenAI's image URLs); the owner's
 * Bearer key reads it without the token; anyone else, a wrong token, or an
 * expired image gets 404, and expired rows are pruned. The async image task
 * (`POST /v1/images/generations/async`) answers the same URLs.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { startGateway } from "../support/Gateway.ts"
import { IMAGE_KEY, imageClient, imageConfig, POOR_KEY } from "../support/ImageGateway.ts"

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
