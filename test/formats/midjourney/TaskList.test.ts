/** The `list-by-condition` body: an array of at most `MAX_LIST_IDS` task ids, else a 400 naming `ids`. */
import { Result } from "effect"
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { decodeMjListIds, MAX_LIST_IDS } from "../../../src/formats/midjourney/TaskList.ts"

Deno.test("decodeMjListIds: a string array of at most MAX_LIST_IDS ids; anything else names ids", () => {
  deepStrictEqual(decodeMjListIds({ ids: ["a", "b"] }), Result.succeed(["a", "b"]))
  for (const body of [{}, { ids: "a" }, { ids: ["a", 1] }, { ids: Array(MAX_LIST_IDS + 1).fill("a") }]) {
    const decoded = decodeMjListIds(body)
    strictEqual(Result.isSuccess(decoded) ? undefined : decoded.failure.param, "ids")
  }
})
