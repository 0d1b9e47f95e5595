/**
 * The notice of a reverse proxy nobody listed is due on the first such
 * request, then at most once an hour.
 */
import { deepStrictEqual } from "node:assert/strict"
import { NOTICE_INTERVAL_MILLIS, noticeDue } from "../../src/http/ProxyNotice.ts"

Deno.test("proxy notice: the first time, then at most once an hour", () => {
  const start = 1_800_000_000_000
  deepStrictEqual(
    [
      noticeDue(undefined, start),
      noticeDue(start, start + 1),
      noticeDue(start, start + NOTICE_INTERVAL_MILLIS - 1),
      noticeDue(start, start + NOTICE_INTERVAL_MILLIS)
    ],
    [true, false, false, true]
  )
})
