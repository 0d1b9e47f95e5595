/**
 * The `openai` SDK's `videos.list` and `videos.delete` on the caller's own
 * video tasks: cursor pages (`after`, `limit`, `order`; `has_more`,
 * `last_id`) through the SDK's auto-pagination, another user's tasks never
 * listed, deleted or read, a deleted task gone, and a task still running not
 * deletable (400 naming `video_id`).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { BOB, eventually, startVideoGateway, videoClient } from "../support/VideoGateway.ts"

Deno.test("videos.list and videos.delete through the SDK: own tasks only, paged, a finished task deleted", async (t) => {
  const gateway = await startVideoGateway()
  const alice = videoClient(gateway)
  const bob = videoClient(gateway, BOB)
  try {
    const made: Array<string> = []
    for (const prompt of ["one", "two", "three"]) {
      made.push((await alice.videos.create({ model: "sora-2", prompt, seconds: "4" })).id)
    }
    await bob.videos.create({ model: "sora-2", prompt: "bob's", seconds: "4" })
    await eventually(async () => {
      const all = await Promise.all(made.map((id) => alice.videos.retrieve(id)))
      return all.every((video) => video.status === "completed")
    })

    await t.step("list: newest first, two per page, every page followed by the SDK; asc reverses", async () => {
      const first = await alice.videos.list({ limit: 2 })
      deepStrictEqual(first.data.map((video) => video.id), [made[2], made[1]])
      strictEqual(first.has_more, true)
      const seen: Array<string> = []
      for await (const video of alice.videos.list({ limit: 2 })) seen.push(video.id)
      deepStrictEqual(seen, [...made].reverse())
      const ascending: Array<string> = []
      for await (const video of alice.videos.list({ limit: 2, order: "asc" })) ascending.push(video.id)
      deepStrictEqual(ascending, made)
      const one = (await alice.videos.list({ limit: 1 })).data[0]
      strictEqual(one.object, "video")
      strictEqual(one.status, "completed")
      const bobs: Array<string> = []
      for await (const video of bob.videos.list()) bobs.push(video.id)
      strictEqual(bobs.length, 1)
      ok(!made.includes(bobs[0]))
    })

    await t.step("bad list parameters are a 400 naming them", async () => {
      for (const [query, param] of [["limit=0", "limit"], ["limit=101", "limit"], ["order=up", "order"]]) {
        const response = await fetch(`${gateway.url}/v1/videos?${query}`, {
          headers: { authorization: `Bearer ${alice.apiKey}` }
        })
        strictEqual(response.status, 400, query)
        strictEqual((await response.json()).error.param, param, query)
      }
      const unknown = await alice.videos.list({ after: "video_nope" }).then(() => undefined, (error) => error)
      strictEqual((unknown as InstanceType<typeof OpenAI.APIError>).status, 404)
    })

    await t.step("delete: another user's task is 404; the owner's finished task is deleted and gone", async () => {
      const foreign = await bob.videos.delete(made[0]).then(() => undefined, (error) => error)
      strictEqual((foreign as InstanceType<typeof OpenAI.APIError>).status, 404)
      deepStrictEqual(await alice.videos.delete(made[0]), { id: made[0], object: "video.deleted", deleted: true })
      const gone = await alice.videos.retrieve(made[0]).then(() => undefined, (error) => error)
      strictEqual((gone as InstanceType<typeof OpenAI.APIError>).status, 404)
      const left: Array<string> = []
      for await (const video of alice.videos.list()) left.push(video.id)
      deepStrictEqual(left, [made[2], made[1]])
    })

    await t.step("a task still running cannot be deleted: 400 naming video_id", async () => {
      const running = await alice.videos.create({ model: "sora-2", prompt: "still going", seconds: "4" })
      const refused = await alice.videos.delete(running.id).then(() => undefined, (error) => error)
      strictEqual((refused as InstanceType<typeof OpenAI.APIError>).status, 400)
      strictEqual((refused as InstanceType<typeof OpenAI.APIError>).param, "video_id")
    })
  } finally {
    await gateway.close()
  }
})
