/**
 * The emulator's video tasks: one in-memory store and state machine shared by
 * the vendor task APIs it speaks (`VideosOpenAi.ts`, `VideosArk.ts`,
 * `VideosGemini.ts`, `VideosKling.ts`), each rendering a task in its own wire format.
 *
 * A task moves with time, one `stepMs` per phase: queued for one step, running
 * for three (progress climbing from 0 towards 99), then final at four steps
 * after its creation. Nothing runs in the background: the phase is computed
 * from the clock at each read, so a store holds no timers.
 *
 * Outcomes on demand, from words in the prompt (as the text routes' `cached`
 * and `parallel`): `unsafe` fails the task as a content-policy refusal,
 * `broken` fails it with a generic generation error, `expire` lets an Ark
 * task expire unfinished (other vendors: a generic failure), `stall` keeps the
 * task running forever (for deadline tests). A queued task can be cancelled
 * (Ark `DELETE`).
 *
 * Memory is bounded: at most `maxTasks` tasks, and prompts of at most
 * `PROMPT_BUDGET` characters in all, are kept; adding one more forgets the
 * oldest (its id then reads as unknown).
 *
 * @since 0.1.0
 */

/** The vendor task API a task was created through; a task is only visible through its own. @category models */
export type VideoVendor = "openai" | "ark" | "gemini" | "kling"

/** How a task ends, chosen at creation from the prompt's marker words. @category models */
export type VideoOutcome = "succeed" | "content_policy" | "fail" | "expire" | "stall"

/** The emulator's own phases; each vendor names them its way. @category models */
export type VideoPhase = "queued" | "running" | "succeeded" | "failed" | "cancelled" | "expired"

/** One video task. Times are epoch milliseconds. @category models */
export interface VideoTask {
  readonly id: string
  readonly vendor: VideoVendor
  readonly model: string
  readonly prompt: string
  readonly createdAt: number
  /** Length of the video in whole seconds. */
  readonly seconds: number
  /** Frame size `<W>x<H>`. */
  readonly size: string
  readonly outcome: VideoOutcome
  /** The unguessable name of its bytes (Ark's `video_url` path, Gemini's file id). */
  readonly contentToken: string
  /** Seed of its bytes (`Mp4.ts`): from the prompt and id, so every task's bytes differ. */
  readonly seed: number
  /** The task it remixes (OpenAI remix), if any. */
  readonly remixedFrom?: string | undefined
  /** Vendor fields echoed back as given (Ark `ratio`, `resolution`, `content`…; Gemini parameters). */
  readonly extras: Readonly<Record<string, unknown>>
  /** Set when cancelled while queued. */
  cancelledAt?: number | undefined
}

/** Where a task stands at one instant. @category models */
export interface VideoState {
  readonly phase: VideoPhase
  /** Percent, 0–100. */
  readonly progress: number
  /** Epoch milliseconds at which it reached a final phase, when it has. */
  readonly finishedAt?: number | undefined
}

/** The emulator's video task store. @category models */
export interface VideoTasks {
  /** Milliseconds per phase step. */
  readonly stepMs: number
  /** Stores a new task (forgetting the oldest beyond the cap) and returns it. */
  readonly add: (task: Omit<VideoTask, "contentToken" | "outcome" | "createdAt" | "seed">) => VideoTask
  /** The task `id` of `vendor`, if kept. */
  readonly get: (vendor: VideoVendor, id: string) => VideoTask | undefined
  /** The tasks of `vendor` kept, oldest first. */
  readonly list: (vendor: VideoVendor) => ReadonlyArray<VideoTask>
  /** The task whose bytes are named `token`, if kept. */
  readonly byToken: (token: string) => VideoTask | undefined
  /** Where `task` stands at `now` (epoch milliseconds). */
  readonly stateOf: (task: VideoTask, now: number) => VideoState
  /** Cancels `task` when it is still queued at `now`; whether it was. */
  readonly cancel: (task: VideoTask, now: number) => boolean
  /** Forgets `task` (Ark's delete of a finished task). */
  readonly remove: (task: VideoTask) => void
  /** How many tasks are kept. */
  readonly size: () => number
  /** Forgets every task. */
  readonly clear: () => void
}

/** The outcome a prompt asks for by its marker words (see the module doc). @category outcomes */
export const outcomeOf = (prompt: string): VideoOutcome =>
  /\bunsafe\b/i.test(prompt)
    ? "content_policy"
    : /\bbroken\b/i.test(prompt)
    ? "fail"
    : /\bexpire\b/i.test(prompt)
    ? "expire"
    : /\bstall\b/i.test(prompt)
    ? "stall"
    : "succeed"

/** `bytes` random bytes as lower-case hex (the unguessable part of ids and content paths). @category ids */
export const randomHex = (bytes: number): string =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (byte) => byte.toString(16).padStart(2, "0")).join("")

/** FNV-1a over `text`'s UTF-16 units. */
const hash = (text: string): number => {
  let value = 0x811c9dc5
  for (let index = 0; index < text.length; index++) {
    value ^= text.charCodeAt(index)
    value = Math.imul(value, 0x01000193) >>> 0
  }
  return value
}

/** The most prompt characters a store keeps over all its tasks (about 100 MB). @category constants */
export const PROMPT_BUDGET = 50_000_000

/** Steps from creation to the final phase. */
const FINAL_STEP = 4

/**
 * A store moving tasks every `stepMs` milliseconds, keeping at most
 * `maxTasks` tasks.
 *
 * @category constructors
 */
export const makeVideoTasks = (stepMs: number, maxTasks: number): VideoTasks => {
  const tasks = new Map<string, VideoTask>()
  const tokens = new Map<string, VideoTask>()
  const keyOf = (vendor: VideoVendor, id: string) => `${vendor} ${id}`
  const step = Math.max(1, stepMs)
  let promptChars = 0

  const forget = (task: VideoTask) => {
    if (tasks.delete(keyOf(task.vendor, task.id))) promptChars -= task.prompt.length
    tokens.delete(task.contentToken)
  }

  const stateOf = (task: VideoTask, now: number): VideoState => {
    if (task.cancelledAt !== undefined) return { phase: "cancelled", progress: 0, finishedAt: task.cancelledAt }
    const elapsed = now - task.createdAt
    if (elapsed < step) return { phase: "queued", progress: 0 }
    const finishedAt = task.createdAt + FINAL_STEP * step
    if (task.outcome === "expire") {
      // An expired task never started: it waits in the queue until it expires.
      return now < finishedAt ? { phase: "queued", progress: 0 } : { phase: "expired", progress: 0, finishedAt }
    }
    if (now < finishedAt || task.outcome === "stall") {
      const running = Math.min(elapsed - step, (FINAL_STEP - 1) * step)
      return { phase: "running", progress: Math.min(99, Math.floor((running / ((FINAL_STEP - 1) * step)) * 100)) }
    }
    return task.outcome === "succeed"
      ? { phase: "succeeded", progress: 100, finishedAt }
      : { phase: "failed", progress: 100, finishedAt }
  }

  return {
    stepMs: step,
    add: (fields) => {
      const task: VideoTask = {
        ...fields,
        createdAt: Date.now(),
        outcome: outcomeOf(fields.prompt),
        contentToken: randomHex(16),
        seed: hash(`${fields.id}\u0000${fields.prompt}`)
      }
      tasks.set(keyOf(task.vendor, task.id), task)
      tokens.set(task.contentToken, task)
      promptChars += task.prompt.length
      while (tasks.size > Math.max(1, maxTasks) || (promptChars > PROMPT_BUDGET && tasks.size > 1)) {
        const oldest = tasks.values().next().value
        if (oldest === undefined) break
        forget(oldest)
      }
      return task
    },
    get: (vendor, id) => tasks.get(keyOf(vendor, id)),
    list: (vendor) => [...tasks.values()].filter((task) => task.vendor === vendor),
    byToken: (token) => tokens.get(token),
    stateOf,
    cancel: (task, now) => {
      if (stateOf(task, now).phase !== "queued") return false
      task.cancelledAt = now
      return true
    },
    remove: (task) => forget(task),
    size: () => tasks.size,
    clear: () => {
      tasks.clear()
      tokens.clear()
      promptChars = 0
    }
  }
}
