/**
 * The emulator's Midjourney-proxy server: the task API novicezk/midjourney-proxy
 * serves under its `/mj` context path and the "plus" servers extend
 * (trueai-org/midjourney-proxy), with the channel key in `mj-api-secret`.
 *
 * - `POST /mj/submit/imagine` `{prompt, base64Array?, botType?, state?, notifyHook?}`
 * - `POST /mj/submit/change` `{taskId, action: UPSCALE|VARIATION|REROLL, index?}`
 * - `POST /mj/submit/action` `{taskId, customId}`: a button of a finished task. `Inpaint` and `CustomZoom`
 *   buttons open a modal: the answer is code 21 ("Waiting for window confirm") and the task waits in `MODAL`
 *   until `POST /mj/submit/modal` `{taskId, prompt?, maskBase64?}` starts it.
 * - `POST /mj/submit/blend` `{base64Array: 2–5 data URIs, dimensions?}`, `POST /mj/submit/describe` `{base64}`
 * - `GET /mj/task/{id}/fetch` (the task object), `POST /mj/task/list-by-condition` `{ids}` (those known)
 * - `GET /_emulator/mj/<id>.png`: a task's image (no key, as the proxies' CDN URLs).
 *
 * Submit answers are `{code, description, result, properties}` with HTTP 200, whatever the code (the proxy's
 * `SubmitResultVO`): 1 submitted, 21 existed / waiting for a modal, 22 queued, 3 not found, 4 validation error,
 * 23 queue full, 24 banned prompt. A task object is `{id, action, customId, botType, prompt, promptEn,
 * description, state, submitTime, startTime, finishTime, imageUrl, status, progress, failReason, buttons,
 * maskBase64, properties}`; status `SUBMITTED` → `IN_PROGRESS` → `SUCCESS` | `FAILURE` (or `MODAL`), progress a
 * percent string ("0%" … "100%"). Buttons `{customId, emoji, label, type, style}` as Discord gives them:
 * after a grid (imagine, variation, reroll, blend) U1–U4 (`MJ::JOB::upsample::{i}::{hash}`), 🔄
 * (`MJ::JOB::reroll::0::{hash}::SOLO`) and V1–V4 (`MJ::JOB::variation::{i}::{hash}`); after an upscale
 * Vary (Strong/Subtle), Zoom Out, pans, Vary (Region) (`MJ::Inpaint::…`) and Custom Zoom (`MJ::CustomZoom::…`).
 *
 * A task moves with time like the video tasks (`VideoTasks.ts`): `SUBMITTED` one step, `IN_PROGRESS` three
 * (with a preview `imageUrl`), final four steps after its start. Prompt words choose outcomes: `broken` fails
 * the task, `stall` keeps it running, `banned` refuses the submit (code 24), `busy` too (code 23, queue
 * full), `queued` answers code 22. Memory is bounded: at most `maxTasks` tasks; the oldest is forgotten.
 *
 * @since 0.1.0
 */
import { jsonReply, type Reply } from "./Sse.ts"
import { type MjButton, type MjTask, type MjTasks } from "./MidjourneyTasks.ts"

export { makeMjTasks, type MjButton, type MjTask, type MjTasks } from "./MidjourneyTasks.ts"
import { seedOf } from "./Png.ts"
import { arrayOr, type JsonObject, type RouteContext, stringOr } from "./Wire.ts"

/** The longest prompt the emulator takes (the proxies have no documented bound; a large one). */
const MAX_PROMPT = 8192

/** The actions whose button opens a modal before the task runs. */
const MODAL_ACTIONS = new Set(["INPAINT", "CUSTOM_ZOOM"])

/** The action a button's `customId` asks for, or `undefined` (new-api `CoverPlusActionToNormalAction`'s rules). */
export const actionOfCustomId = (customId: string): string | undefined => {
  const parts = customId.split("::")
  if (parts[0] !== "MJ") return undefined
  const verb = parts[1] === "JOB" ? parts[2] ?? "" : parts[1] ?? ""
  if (verb.startsWith("upsample")) return "UPSCALE"
  if (verb === "variation") return "VARIATION"
  if (verb === "high_variation") return "HIGH_VARIATION"
  if (verb === "low_variation") return "LOW_VARIATION"
  if (verb.startsWith("pan_")) return "PAN"
  if (verb === "reroll") return "REROLL"
  if (verb === "Outpaint") return "ZOOM"
  if (verb === "CustomZoom") return "CUSTOM_ZOOM"
  if (verb === "Inpaint") return "INPAINT"
  return undefined
}

const button = (customId: string, label: string, emoji = "", style = 2): MjButton => ({
  customId,
  emoji,
  label,
  type: 2,
  style
})

/** The buttons of a finished `task`, as Discord attaches them to its message. */
const buttonsOf = (task: MjTask): ReadonlyArray<MjButton> => {
  const hash = task.hash
  switch (task.action) {
    case "IMAGINE":
    case "VARIATION":
    case "HIGH_VARIATION":
    case "LOW_VARIATION":
    case "REROLL":
    case "BLEND":
    case "ZOOM":
    case "PAN":
    case "CUSTOM_ZOOM":
    case "INPAINT":
      return [
        ...[1, 2, 3, 4].map((index) => button(`MJ::JOB::upsample::${index}::${hash}`, `U${index}`)),
        button(`MJ::JOB::reroll::0::${hash}::SOLO`, "", "🔄"),
        ...[1, 2, 3, 4].map((index) => button(`MJ::JOB::variation::${index}::${hash}`, `V${index}`))
      ]
    case "UPSCALE":
      return [
        button(`MJ::JOB::high_variation::1::${hash}::SOLO`, "Vary (Strong)", "🪄"),
        button(`MJ::JOB::low_variation::1::${hash}::SOLO`, "Vary (Subtle)", "🪄"),
        button(`MJ::Inpaint::1::${hash}::SOLO`, "Vary (Region)", "🖌️"),
        button(`MJ::Outpaint::50::1::${hash}::SOLO`, "Zoom Out 2x", "🔍"),
        button(`MJ::Outpaint::75::1::${hash}::SOLO`, "Zoom Out 1.5x", "🔍"),
        button(`MJ::CustomZoom::${hash}`, "Custom Zoom", "🔍"),
        button(`MJ::JOB::pan_left::1::${hash}::SOLO`, "", "⬅️"),
        button(`MJ::JOB::pan_right::1::${hash}::SOLO`, "", "➡️")
      ]
    default:
      return []
  }
}

/** Where a task stands at `now`: status, progress percent, and when it finished (if it has). */
const stateOf = (tasks: MjTasks, task: MjTask, now: number) => {
  if (task.startedAt === undefined) return { status: "MODAL", progress: 0, finishedAt: undefined }
  const step = tasks.stepMs
  const elapsed = now - task.startedAt
  if (elapsed < step) return { status: "SUBMITTED", progress: 0, finishedAt: undefined }
  const finishedAt = task.startedAt + 4 * step
  if (now < finishedAt || task.outcome === "stall") {
    const running = Math.min(elapsed - step, 3 * step)
    return { status: "IN_PROGRESS", progress: Math.min(99, Math.floor((running / (3 * step)) * 100)), finishedAt }
  }
  return { status: task.outcome === "succeed" ? "SUCCESS" : "FAILURE", progress: 100, finishedAt }
}

/** The emulator's own origin, as the caller reached it (for image URLs). */
const originOf = (context: RouteContext): string => `http://${context.headers.get("host") ?? "127.0.0.1"}`

/**
 * The task object of `task` at `now`, as `GET /mj/task/{id}/fetch` answers it.
 *
 * @category rendering
 */
export const mjTaskObject = (context: RouteContext, task: MjTask, now: number): JsonObject => {
  const state = stateOf(context.midjourney, task, now)
  const image = `${originOf(context)}/_emulator/mj/${task.id}.png`
  const described = task.action === "DESCRIBE" && state.status === "SUCCESS"
  const prompt = described
    ? "1️⃣ a quiet harbour at dawn --ar 1:1\n\n2️⃣ boats in mist, watercolor --ar 1:1"
    : task.prompt
  return {
    id: task.id,
    action: task.action,
    customId: "",
    botType: "MID_JOURNEY",
    prompt,
    promptEn: prompt,
    description: task.description,
    state: task.state,
    submitTime: task.submittedAt,
    startTime: task.startedAt ?? 0,
    finishTime: state.status === "SUCCESS" || state.status === "FAILURE" ? state.finishedAt ?? 0 : 0,
    imageUrl: state.status === "SUCCESS"
      ? image
      : state.status === "IN_PROGRESS"
      ? `${image}?preview=${state.progress}`
      : "",
    status: state.status,
    progress: `${state.progress}%`,
    failReason: state.status === "FAILURE" ? "The generation failed (emulated)." : "",
    buttons: state.status === "SUCCESS" ? buttonsOf(task) : [],
    maskBase64: "",
    properties: { finalPrompt: prompt, finalZhPrompt: "" }
  }
}

/** A submit answer (always HTTP 200, as the proxy's `SubmitResultVO`). */
const submitAnswer = (code: number, description: string, result: string | null, properties: JsonObject = {}) =>
  jsonReply({ code, description, result, properties })

const invalid = (description: string) => submitAnswer(4, description, null)

const isDataUri = (value: unknown): value is string =>
  typeof value === "string" && /^data:[a-z]+\/[a-z0-9.+-]+;base64,/i.test(value) && value.length <= 16 * 1024 * 1024

/** The refusal the prompt's marker words ask for, if any. */
const refusal = (prompt: string): Reply | undefined =>
  /\bbanned\b/i.test(prompt)
    ? submitAnswer(24, "Possibly contains sensitive words", null, { promptEn: prompt, bannedWord: "banned" })
    : /\bbusy\b/i.test(prompt)
    ? submitAnswer(23, "The queue is full, please try later", null)
    : undefined

/** Adds a task and answers its submit (code 22 for the `queued` marker, else 1). */
const submitted = (context: RouteContext, fields: Parameters<MjTasks["add"]>[0]): Reply => {
  const refused = refusal(fields.prompt)
  if (refused !== undefined) return refused
  const task = context.midjourney.add(fields)
  return /\bqueued\b/i.test(fields.prompt)
    ? submitAnswer(22, "In queue, there is 1 task ahead", task.id, { numberOfQueues: 1 })
    : submitAnswer(1, "Submit success", task.id, { discordInstanceId: "1118138338562560102" })
}

const baseFields = (body: JsonObject) => ({ state: stringOr(body.state) ?? "" })

/** `POST /mj/submit/imagine`. @category handlers */
export const mjImagine = (context: RouteContext): Reply => {
  const { body } = context
  const prompt = body.prompt
  if (typeof prompt !== "string" || prompt.trim() === "") return invalid("prompt cannot be empty")
  if (prompt.length > MAX_PROMPT) return invalid(`prompt is longer than ${MAX_PROMPT} characters`)
  if (body.base64Array !== undefined && !arrayOr(body.base64Array).every(isDataUri)) {
    return invalid("base64Array must hold data URIs")
  }
  return submitted(context, {
    ...baseFields(body),
    action: "IMAGINE",
    prompt,
    description: `/imagine ${prompt}`,
    startedAt: Date.now()
  })
}

/** A child task of `parent` for `action` (index for U/V), or the refusal. */
const child = (context: RouteContext, parentId: unknown, action: string, index: number, modal: boolean): Reply => {
  if (typeof parentId !== "string" || parentId === "") return invalid("taskId cannot be empty")
  const parent = context.midjourney.get(parentId)
  if (parent === undefined) return submitAnswer(3, "The related task does not exist or has expired", null)
  if (stateOf(context.midjourney, parent, Date.now()).status !== "SUCCESS") {
    return invalid("The related task is not finished")
  }
  const fields = {
    ...baseFields(context.body),
    action,
    prompt: parent.prompt,
    description: `/up ${parent.id} ${action === "REROLL" ? "R" : `${action.charAt(0)}${index}`}`,
    startedAt: modal ? undefined : Date.now()
  }
  if (!modal) return submitted(context, fields)
  const task = context.midjourney.add(fields)
  return submitAnswer(21, "Waiting for window confirm", task.id, { finalPrompt: parent.prompt, remix: true })
}

/** `POST /mj/submit/change` (the open-source proxy's U/V/R). @category handlers */
export const mjChange = (context: RouteContext): Reply => {
  const { body } = context
  const action = body.action
  if (action !== "UPSCALE" && action !== "VARIATION" && action !== "REROLL") return invalid("action is invalid")
  const index = typeof body.index === "number" ? body.index : 0
  if (action !== "REROLL" && !(Number.isInteger(index) && index >= 1 && index <= 4)) {
    return invalid("index must be 1 to 4")
  }
  return child(context, body.taskId, action, index, false)
}

/** `POST /mj/submit/action` (a button's `customId`). @category handlers */
export const mjAction = (context: RouteContext): Reply => {
  const { body } = context
  const customId = body.customId
  if (typeof customId !== "string" || customId === "") return invalid("customId cannot be empty")
  const action = actionOfCustomId(customId)
  const parent = typeof body.taskId === "string" ? context.midjourney.get(body.taskId) : undefined
  if (action === undefined || (parent !== undefined && !buttonsOf(parent).some((b) => b.customId === customId))) {
    return invalid("customId is not a button of the task")
  }
  const index = Number(customId.split("::")[3] ?? "1")
  return child(context, body.taskId, action, Number.isInteger(index) ? index : 1, MODAL_ACTIONS.has(action))
}

/** `POST /mj/submit/modal`: starts a task that waits for its modal. @category handlers */
export const mjModal = (context: RouteContext): Reply => {
  const { body } = context
  if (typeof body.taskId !== "string" || body.taskId === "") return invalid("taskId cannot be empty")
  const task = context.midjourney.get(body.taskId)
  if (task === undefined) return submitAnswer(3, "The task does not exist or has expired", null)
  if (task.startedAt !== undefined) return invalid("The task is not waiting for a modal")
  if (body.maskBase64 !== undefined && body.maskBase64 !== "" && !isDataUri(body.maskBase64)) {
    return invalid("maskBase64 must be a data URI")
  }
  if (body.prompt !== undefined && typeof body.prompt !== "string") return invalid("prompt must be a string")
  task.startedAt = Date.now()
  return submitAnswer(1, "Submit success", task.id)
}

/** `POST /mj/submit/blend`. @category handlers */
export const mjBlend = (context: RouteContext): Reply => {
  const images = context.body.base64Array
  if (!Array.isArray(images) || images.length < 2 || images.length > 5 || !images.every(isDataUri)) {
    return invalid("base64Array must hold 2 to 5 data URIs")
  }
  const dimensions = context.body.dimensions ?? "SQUARE"
  if (dimensions !== "PORTRAIT" && dimensions !== "SQUARE" && dimensions !== "LANDSCAPE") {
    return invalid("dimensions must be PORTRAIT, SQUARE or LANDSCAPE")
  }
  return submitted(context, {
    ...baseFields(context.body),
    action: "BLEND",
    prompt: "",
    description: `/blend ${images.length}`,
    startedAt: Date.now()
  })
}

/** `POST /mj/submit/describe`. @category handlers */
export const mjDescribe = (context: RouteContext): Reply => {
  if (!isDataUri(context.body.base64)) return invalid("base64 must be a data URI")
  return submitted(context, {
    ...baseFields(context.body),
    action: "DESCRIBE",
    prompt: "",
    description: "/describe image.png",
    startedAt: Date.now()
  })
}

/** `GET /mj/task/{id}/fetch`. @category handlers */
export const mjFetch = (context: RouteContext): Reply => {
  const id = decodeURIComponent(context.path.split("/")[3] ?? "")
  const task = context.midjourney.get(id)
  return task === undefined
    ? jsonReply({ code: 3, description: "The task does not exist", result: null }, 404)
    : jsonReply(mjTaskObject(context, task, Date.now()))
}

/** `POST /mj/task/list-by-condition`: the known tasks among `ids`, in their order. @category handlers */
export const mjListByCondition = (context: RouteContext): Reply => {
  const now = Date.now()
  const ids = arrayOr(context.body.ids).filter((id): id is string => typeof id === "string").slice(0, 1000)
  return jsonReply(
    ids.map((id) => context.midjourney.get(id)).filter((task) => task !== undefined).map((task) =>
      mjTaskObject(context, task, now)
    )
  )
}

/** The seed of a task's image (`/_emulator/mj/<id>.png`), or `undefined` for an unknown id. @category images */
export const mjImageSeed = (tasks: MjTasks, id: string): number | undefined => {
  const task = tasks.get(id)
  return task === undefined ? undefined : seedOf(`${task.id}\u0000${task.prompt}`)
}
