/**
 * The emulator's Midjourney task store: tasks that move with time
 * (`Midjourney.ts` serves them), bounded in number.
 *
 * @since 0.1.0
 */

/** One Discord-style button of a finished task. @category models */
export interface MjButton {
  readonly customId: string
  readonly emoji: string
  readonly label: string
  readonly type: number
  readonly style: number
}

/** One emulated Midjourney task. Times are epoch milliseconds. @category models */
export interface MjTask {
  readonly id: string
  readonly action: string
  readonly prompt: string
  readonly description: string
  readonly state: string
  readonly submittedAt: number
  /** When it started moving (its submit, or its modal's submit); `undefined` while it waits for a modal. */
  startedAt: number | undefined
  readonly outcome: "succeed" | "fail" | "stall"
  /** The message hash its buttons carry. */
  readonly hash: string
}

/** The emulator's Midjourney tasks. @category models */
export interface MjTasks {
  readonly stepMs: number
  readonly add: (task: Omit<MjTask, "id" | "hash" | "submittedAt" | "outcome">) => MjTask
  readonly get: (id: string) => MjTask | undefined
  readonly clear: () => void
}

/** The most tasks the store keeps by default. */
const DEFAULT_MAX = 50_000

/**
 * A task store moving tasks every `stepMs` milliseconds, keeping at most `maxTasks` tasks.
 *
 * @category constructors
 */
export const makeMjTasks = (stepMs: number, maxTasks = DEFAULT_MAX): MjTasks => {
  const tasks = new Map<string, MjTask>()
  return {
    stepMs: Math.max(1, stepMs),
    add: (fields) => {
      // 16 digits, as the proxy's `RandomUtil.randomNumbers(16)`.
      const id = Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => String(byte % 10)).join("")
      const task: MjTask = {
        ...fields,
        id,
        hash: crypto.randomUUID(),
        submittedAt: Date.now(),
        outcome: /\bbroken\b/i.test(fields.prompt) ? "fail" : /\bstall\b/i.test(fields.prompt) ? "stall" : "succeed"
      }
      tasks.set(id, task)
      while (tasks.size > Math.max(1, maxTasks)) {
        const oldest = tasks.keys().next().value
        if (oldest === undefined) break
        tasks.delete(oldest)
      }
      return task
    },
    get: (id) => tasks.get(id),
    clear: () => tasks.clear()
  }
}
