/**
 * A stored task for the tasks unit tests (poller, final bill): a video of 8 seconds charged
 * 800,000 units at ratio 1 and 0.1 USD a second, its deadline 2030-01-01.
 */
import { insertedTask, type Task } from "../../src/tasks/store/Task.ts"

/** 2030-01-01T00:00:00Z, the task's deadline (epoch ms). */
export const DEADLINE = Date.UTC(2030, 0, 1)

/** The video task, with `patch` over it. */
export const taskWith = (patch: Partial<Task> = {}): Task => ({
  ...insertedTask(
    {
      publicId: "video_abc",
      kind: "video",
      userId: 7n,
      tokenId: 9n,
      channelId: 3,
      keyPosition: 0,
      upstreamId: "up-1",
      model: "sora-2",
      upstreamModel: "sora-2",
      request: {},
      status: "in_progress",
      requestId: "req-1",
      billing: { ratio: "1000000000", perSecond: "100000000", free: false, seconds: 8 },
      quotaCharged: 800_000n,
      nextPollAt: 0,
      deadlineAt: DEADLINE
    },
    41n,
    0
  ),
  ...patch
})
