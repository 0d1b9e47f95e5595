/**
 * One Kling video task driven over HTTP the way the relay and the poller
 * drive it (`VideoTaskRun.ts`): the kling channel type's adapter signs each
 * call from the channel key `accessKey|secretKey`, the emulator verifies the
 * token with jose; submitted, polled to completed, the bytes fetched from the
 * result URL without a token; a failed task and a refused submit read as the
 * wire says; a wrong secret key is refused as `unauthorized`.
 */
import { ok, strictEqual } from "node:assert/strict"
import type { VideoRequest } from "../../src/canonical/Video.ts"
import { KLING_TEST_ACCESS_KEY, KLING_TEST_SECRET_KEY } from "../../emulator/VideosKling.ts"
import { klingVideoWire } from "../../src/formats/kling/videos/Wire.ts"
import type { Channel } from "../../src/upstreams/Adapter.ts"
import { withEmulator } from "../emulator/Support.ts"
import { runTask } from "../support/VideoTaskRun.ts"

const KEY = `${KLING_TEST_ACCESS_KEY}|${KLING_TEST_SECRET_KEY}`
const STEP = 150

const channel = (url: string): Channel => ({ type: "kling", baseUrl: `${url}/v1`, settings: {} })

const request = (prompt: string, fields: Partial<VideoRequest> = {}): VideoRequest => ({
  model: "kling-v2-master",
  prompt,
  references: [],
  ...fields
})

Deno.test("kling video task over HTTP: signed, submitted, polled to completed, bytes fetched without the token", async () => {
  await withEmulator({ videoStepMs: STEP }, async (emulator) => {
    const run = await runTask(
      klingVideoWire,
      channel(emulator.url),
      KEY,
      request("a fox in the snow", {
        seconds: 10,
        references: [{ kind: "image", role: "first_frame", ref: "https://example.com/first.png" }]
      }),
      "kling-v2-master",
      STEP / 3
    )
    ok(!("refused" in run))
    ok(/^image2video:\d{18}$/.test(run.upstreamId), run.upstreamId)
    strictEqual(run.last.status, "completed")
    ok(!("kind" in run.last))
    strictEqual(run.last.seconds, 10)
    strictEqual(run.last.content?.withKey, false)
    strictEqual(run.content?.response.status, 200)
    strictEqual(run.content?.headers.authorization, undefined, "the result URL is fetched without the token")
    strictEqual(
      new TextDecoder().decode(new Uint8Array(await run.content!.response.arrayBuffer()).subarray(4, 8)),
      "ftyp"
    )
    for (const recorded of emulator.requests.filter((item) => item.path.startsWith("/v1/videos/"))) {
      strictEqual(recorded.key, KLING_TEST_ACCESS_KEY)
      ok(!JSON.stringify(recorded.headers).includes(KLING_TEST_SECRET_KEY))
    }
  })
})

Deno.test("kling video task over HTTP: a failed task, a refused submit, a wrong secret key", async () => {
  await withEmulator({ videoStepMs: STEP }, async (emulator) => {
    const failed = await runTask(klingVideoWire, channel(emulator.url), KEY, request("broken"), "kling-v1", STEP / 3)
    ok(!("refused" in failed))
    strictEqual(failed.last.status, "failed")
    ok(!("kind" in failed.last) && failed.last.error?.message !== undefined && failed.last.error.message.length > 0)

    const refused = await runTask(klingVideoWire, channel(emulator.url), KEY, request("x", { seconds: 7 }), "m", 10)
    ok("refused" in refused)
    strictEqual(refused.refused.kind, "rejected")

    const wrong = await runTask(
      klingVideoWire,
      channel(emulator.url),
      `${KLING_TEST_ACCESS_KEY}|sk-test-not-the-secret`,
      request("x"),
      "m",
      10
    )
    ok("refused" in wrong)
    strictEqual(wrong.refused.kind, "unauthorized")
  })
})
