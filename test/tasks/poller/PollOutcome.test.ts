/**
 * What an upstream's answer means for a task, with plain values: running
 * with the reported (else the stored) progress; a completed video re-priced
 * on its actual length (else charged as submitted), a completed Midjourney
 * task at its submit's charge; a failure at no cost, with the vendor's error
 * or a default.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import type { MjPoll } from "../../../src/formats/midjourney/Wire.ts"
import { midjourneyOutcome, repriced, videoOutcome } from "../../../src/tasks/poller/PollOutcome.ts"
import { taskWith } from "../TaskFixture.ts"

const task = taskWith({ progress: 30 })

Deno.test("repriced: the actual seconds (rounded up) at the charged prices; undefined without a length or a price", () => {
  strictEqual(repriced(task.billing, 8), 800_000n)
  strictEqual(repriced(task.billing, 5.2), 600_000n)
  strictEqual(repriced({ ...task.billing, free: true }, 8), 0n)
  strictEqual(repriced(task.billing, undefined), undefined)
  strictEqual(repriced({ ratio: "1000000000", free: false, n: 2 }, 8), undefined)
})

Deno.test("videoOutcome: running keeps the stored progress when the upstream reports none", () => {
  deepStrictEqual(videoOutcome(task, { status: "queued" }), {
    _tag: "Running",
    state: { status: "queued", progress: 30 }
  })
  deepStrictEqual(videoOutcome(task, { status: "in_progress", progress: 55 }), {
    _tag: "Running",
    state: { status: "in_progress", progress: 55 }
  })
})

Deno.test("videoOutcome: completed is re-priced on its actual length, else charged as submitted", () => {
  const shorter = videoOutcome(task, {
    status: "completed",
    content: { url: "https://vendor.test/v.mp4", withKey: false, expiresAt: 1_900_000_000 },
    seconds: 4,
    width: 1280,
    height: 720,
    fps: 24,
    usage: 99
  })
  deepStrictEqual(shorter, {
    _tag: "Ended",
    end: {
      status: "completed",
      result: {
        url: "https://vendor.test/v.mp4",
        withKey: false,
        expiresAt: 1_900_000_000,
        seconds: 4,
        width: 1280,
        height: 720,
        fps: 24,
        usage: 99
      },
      cost: 400_000n
    }
  })
  const unknown = videoOutcome(task, { status: "completed" })
  strictEqual(unknown._tag === "Ended" && unknown.end.cost, 800_000n, "no length reported: the charge stands")
  strictEqual(unknown._tag === "Ended" && unknown.end.result?.withKey, true, "no content: fetched with the key")
})

Deno.test("videoOutcome: failed at no cost, with the vendor's error or a default", () => {
  deepStrictEqual(videoOutcome(task, { status: "failed", error: { code: "moderation", message: "Refused." } }), {
    _tag: "Ended",
    end: { status: "failed", error: { code: "moderation", message: "Refused." }, cost: 0n }
  })
  deepStrictEqual(videoOutcome(task, { status: "failed" }), {
    _tag: "Ended",
    end: { status: "failed", error: { code: "failed", message: "The upstream could not make the video." }, cost: 0n }
  })
})

const detail = {
  prompt: "a lake",
  promptEn: "a lake",
  description: "",
  startTime: 1,
  finishTime: 2,
  buttons: [],
  finalPrompt: "a lake"
}
const poll = (patch: Partial<MjPoll>): MjPoll => ({
  status: "in_progress",
  progress: 10,
  imageUrl: undefined,
  failReason: undefined,
  detail,
  ...patch
})

Deno.test("midjourneyOutcome: running with its progress; completed at the submit's charge; failed refunded", () => {
  const mjTask = taskWith({ kind: "midjourney", quotaCharged: 50_000n })
  deepStrictEqual(midjourneyOutcome(mjTask, poll({ progress: 70 })), {
    _tag: "Running",
    state: { status: "in_progress", progress: 70 }
  })
  deepStrictEqual(midjourneyOutcome(mjTask, poll({ status: "completed", imageUrl: "https://cdn.test/i.png" })), {
    _tag: "Ended",
    end: {
      status: "completed",
      result: { url: "https://cdn.test/i.png", withKey: false },
      publicResult: detail,
      cost: 50_000n
    }
  })
  deepStrictEqual(midjourneyOutcome(mjTask, poll({ status: "failed", failReason: "Banned prompt." })), {
    _tag: "Ended",
    end: {
      status: "failed",
      error: { code: "generation_failed", message: "Banned prompt." },
      publicResult: detail,
      cost: 0n
    }
  })
  const silent = midjourneyOutcome(mjTask, poll({ status: "failed" }))
  strictEqual(silent._tag === "Ended" && silent.end.error?.message, "The upstream failed the task.")
})
