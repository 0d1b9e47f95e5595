/**
 * The video list query and shapes as pure functions: `limit` 1 to 100
 * (default 20), `order` asc or desc (default desc), the first bad parameter
 * named; the cursor page and the delete answer as `videos.list` and
 * `videos.delete` read them.
 */
import { Result } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { decodeVideoListQuery, encodeVideoDeleted, encodeVideoList } from "../../../src/formats/videos/VideoList.ts"
import type { TaskView } from "../../../src/formats/videos/VideoObject.ts"

const decode = (query: string) => decodeVideoListQuery(new URLSearchParams(query))

Deno.test("decodeVideoListQuery: defaults, bounds and the first bad parameter", () => {
  deepStrictEqual(decode(""), Result.succeed({ after: undefined, limit: 20, order: "desc" }))
  deepStrictEqual(
    decode("after=video_x&limit=100&order=asc"),
    Result.succeed({ after: "video_x", limit: 100, order: "asc" })
  )
  const bad: ReadonlyArray<readonly [string, string]> = [
    ["limit=0", "limit"],
    ["limit=101", "limit"],
    ["limit=1.5", "limit"],
    ["limit=x&order=up", "limit"],
    ["order=up", "order"]
  ]
  for (const [query, param] of bad) {
    const decoded = decode(query)
    strictEqual(Result.isSuccess(decoded) ? undefined : decoded.failure.param, param, query)
  }
})

Deno.test("encodeVideoList and encodeVideoDeleted: the cursor page and the delete answer", () => {
  const view = (id: string): TaskView => ({
    id,
    model: "sora-2",
    status: "queued",
    progress: 0,
    createdAt: 1,
    completedAt: null,
    seconds: 4,
    size: undefined,
    prompt: "p",
    url: null,
    error: null,
    actual: {},
    remixOf: undefined,
    mini: false
  })
  const page = encodeVideoList([view("video_a"), view("video_b")], true)
  deepStrictEqual([page.object, page.first_id, page.last_id, page.has_more], ["list", "video_a", "video_b", true])
  strictEqual((page.data as Array<Record<string, unknown>>)[1].id, "video_b")
  deepStrictEqual(encodeVideoList([], false), {
    object: "list",
    data: [],
    first_id: null,
    last_id: null,
    has_more: false
  })
  deepStrictEqual(encodeVideoDeleted("video_a"), { id: "video_a", object: "video.deleted", deleted: true })
})
