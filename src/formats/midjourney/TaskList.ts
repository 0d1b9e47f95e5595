/**
 * The body of `POST /mj/task/list-by-condition`, as Midjourney-proxy clients
 * send it (`{ids: [<task id>, …]}`; `formats/midjourney/Wire.ts` has the
 * proxy's sources): the ids to read, at most `MAX_LIST_IDS`.
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import type { Decoded } from "../shared/Decoded.ts"

/** The most ids one `list-by-condition` reads. @category constants */
export const MAX_LIST_IDS = 100

/**
 * The `ids` of a `list-by-condition` body: an array of at most
 * `MAX_LIST_IDS` strings, else an `InvalidRequest` naming `ids`.
 *
 * @category decoding
 */
export const decodeMjListIds = (body: Record<string, unknown>): Decoded<ReadonlyArray<string>> => {
  const ids = body.ids
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === "string")) {
    return Result.fail(new InvalidRequest({ message: "ids must be an array of task ids.", param: "ids" }))
  }
  if (ids.length > MAX_LIST_IDS) {
    return Result.fail(new InvalidRequest({ message: `ids may hold at most ${MAX_LIST_IDS} task ids.`, param: "ids" }))
  }
  return Result.succeed(ids)
}
