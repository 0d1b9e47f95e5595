/**
 * The Midjourney-proxy wire, both sides: what `/mj/*` callers send and get
 * (the gateway speaks the proxy's own API to them) and what a `midjourney`
 * channel's proxy server answers.
 *
 * Sources: novicezk/midjourney-proxy (`SubmitController`: `/submit/imagine`,
 * `/submit/change`, `/submit/blend`, `/submit/describe`; `ReturnCode`: 1
 * success, 3 not found, 4 validation error, 9 failure, 21 existed, 22 in queue,
 * 23 queue full, 24 banned prompt; `TaskStatus`: `NOT_START`, `SUBMITTED`,
 * `IN_PROGRESS`, `FAILURE`, `SUCCESS`), trueai-org/midjourney-proxy
 * (`SubmitActionDTO {taskId, customId}`, `SubmitModalDTO {taskId, prompt,
 * maskBase64}`, `SubmitBlendDTO {base64Array, dimensions}`,
 * `TaskConditionDTO {ids}`; statuses `MODAL`, `CANCEL`), and new-api's relay
 * (`relay/relay-mj.go`, `service/midjourney.go`: an action's price is the
 * model `mj_<action>`; a button's `customId` names its action; 21 and 22
 * answer the caller as 1, except the 21 of an action that waits for a modal).
 *
 * Every string from a caller or the upstream is hostile: lengths are bounded,
 * media must be `data:` URIs, the upstream's task object is read field by
 * field and only what a caller may see is kept.
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import type { TaskStatus } from "../../canonical/Video.ts"
import type { Problem } from "../../domain/Problem.ts"
import { safeVendorText } from "../../domain/Redact.ts"
import { InvalidRequest, UpstreamFailed, type UpstreamFailureKind } from "../../errors/GatewayError.ts"
import type { Decoded } from "../shared/Decoded.ts"

/** The actions a Midjourney task can be. @category models */
export type MjAction =
  | "IMAGINE"
  | "UPSCALE"
  | "VARIATION"
  | "HIGH_VARIATION"
  | "LOW_VARIATION"
  | "REROLL"
  | "ZOOM"
  | "PAN"
  | "CUSTOM_ZOOM"
  | "INPAINT"
  | "BLEND"
  | "DESCRIBE"

/**
 * The actions whose button opens a modal: the task waits until
 * `/mj/submit/modal` sends its prompt or mask.
 *
 * @category models
 */
export const MODAL_ACTIONS: ReadonlySet<MjAction> = new Set(["INPAINT", "CUSTOM_ZOOM"])

/**
 * The model whose price bills `action` (new-api's `mj_<action>`, lower
 * case). An action that opens a modal is billed as `mj_modal` (what new-api
 * charges when the modal is submitted), once, at the action.
 *
 * @category billing
 */
export const modelOfAction = (action: MjAction): string =>
  MODAL_ACTIONS.has(action) ? "mj_modal" : `mj_${action.toLowerCase()}`

/**
 * The action a button's `customId` asks for (`MJ::JOB::upsample::2::<hash>`
 * → `UPSCALE`), as new-api's `CoverPlusActionToNormalAction` reads it, or
 * `undefined` for one it does not know.
 *
 * @category decoding
 */
export const actionOfCustomId = (customId: string): MjAction | undefined => {
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

/** The longest prompt taken, in UTF-16 units. @category constants */
export const MAX_PROMPT = 8192
/** The most images of an imagine's `base64Array` or a blend. @category constants */
export const MAX_IMAGES = 5

/** Fields every submit may carry: the caller's `state` (echoed on the task), the bot. @category models */
interface Common {
  readonly state?: string | undefined
  readonly botType?: "MID_JOURNEY" | "NIJI_JOURNEY" | undefined
}

/** A decoded `/mj/submit/*` body. @category models */
export type MjSubmit =
  | Common & { readonly kind: "imagine"; readonly prompt: string; readonly base64Array?: ReadonlyArray<string> }
  | Common & {
    readonly kind: "blend"
    readonly base64Array: ReadonlyArray<string>
    readonly dimensions?: "PORTRAIT" | "SQUARE" | "LANDSCAPE" | undefined
  }
  | Common & { readonly kind: "describe"; readonly base64: string }
  | Common & {
    readonly kind: "change"
    readonly taskId: string
    readonly action: "UPSCALE" | "VARIATION" | "REROLL"
    readonly index?: number | undefined
  }
  | Common & { readonly kind: "action"; readonly taskId: string; readonly customId: string }
  | {
    readonly kind: "modal"
    readonly taskId: string
    readonly prompt?: string | undefined
    readonly maskBase64?: string | undefined
  }

/**
 * The submit routes by their last path segment: each kind of `MjSubmit`, and
 * `simple-change` (`{content: "<taskId> U1"}`, novicezk's shorthand, decoded
 * as the `change` it names).
 *
 * @category models
 */
export type MjSubmitKind = MjSubmit["kind"] | "simple-change"

type Refused<A> = Result.Result<A, InvalidRequest>

const bad = (message: string, param: string): Refused<never> => Result.fail(new InvalidRequest({ message, param }))

const optionalString = (body: Record<string, unknown>, name: string, max: number): Refused<string | undefined> => {
  const value = body[name]
  if (value === undefined || value === null) return Result.succeed(undefined)
  if (typeof value !== "string") return bad(`${name} must be a string.`, name)
  if (value.length > max) return bad(`${name} is longer than ${max} characters.`, name)
  return Result.succeed(value)
}

const taskIdOf = (body: Record<string, unknown>): Refused<string> => {
  const value = body.taskId
  if (typeof value !== "string" || value.trim() === "") return bad("taskId is required.", "taskId")
  if (value.length > 100) return bad("taskId is longer than 100 characters.", "taskId")
  return Result.succeed(value)
}

const isImageDataUri = (value: unknown): value is string =>
  typeof value === "string" && /^data:image\/[a-z0-9.+-]{1,50};base64,[A-Za-z0-9+/=\s]+$/i.test(value)

const imagesOf = (value: unknown, param: string, min: number): Refused<ReadonlyArray<string>> => {
  if (!Array.isArray(value)) return bad(`${param} must be an array of image data URIs.`, param)
  if (value.length < min || value.length > MAX_IMAGES) {
    return bad(`${param} must hold ${min} to ${MAX_IMAGES} images.`, param)
  }
  const index = value.findIndex((item) => !isImageDataUri(item))
  return index === -1
    ? Result.succeed(value as ReadonlyArray<string>)
    : bad(`${param}[${index}] must be a data:image/...;base64 URI.`, `${param}[${index}]`)
}

const commonOf = (body: Record<string, unknown>): Refused<Common> =>
  Result.gen(function* () {
    const botType = body.botType
    if (botType !== undefined && botType !== null && botType !== "MID_JOURNEY" && botType !== "NIJI_JOURNEY") {
      return yield* bad("botType must be MID_JOURNEY or NIJI_JOURNEY.", "botType")
    }
    return { state: yield* optionalString(body, "state", 1000), botType: botType ?? undefined }
  })

/**
 * Decodes the body of `POST /mj/submit/{kind}`: `Result.succeed(MjSubmit)`,
 * or `Result.fail(InvalidRequest)` whose `param` names the field.
 * `notifyHook` and `accountFilter` are not decoded: they are never forwarded
 * (a hook would receive the upstream's ids; the account pool is the
 * operator's).
 *
 * @category decoding
 */
export const decodeMjSubmit = (
  kind: MjSubmitKind,
  body: Record<string, unknown>
): Decoded<MjSubmit> =>
  Result.gen(function* () {
    switch (kind) {
      case "imagine": {
        const prompt = body.prompt
        if (typeof prompt !== "string" || prompt.trim() === "") return yield* bad("prompt is required.", "prompt")
        if (prompt.length > MAX_PROMPT) return yield* bad(`prompt is longer than ${MAX_PROMPT} characters.`, "prompt")
        const base64Array = body.base64Array === undefined || body.base64Array === null
          ? undefined
          : yield* imagesOf(body.base64Array, "base64Array", 0)
        return { kind, ...yield* commonOf(body), prompt, base64Array }
      }
      case "blend": {
        const dimensions = body.dimensions ?? undefined
        if (
          dimensions !== undefined && dimensions !== "PORTRAIT" && dimensions !== "SQUARE" && dimensions !== "LANDSCAPE"
        ) return yield* bad("dimensions must be PORTRAIT, SQUARE or LANDSCAPE.", "dimensions")
        const common = yield* commonOf(body)
        return { kind, ...common, base64Array: yield* imagesOf(body.base64Array, "base64Array", 2), dimensions }
      }
      case "describe": {
        if (!isImageDataUri(body.base64)) return yield* bad("base64 must be a data:image/...;base64 URI.", "base64")
        return { kind, ...yield* commonOf(body), base64: body.base64 }
      }
      case "simple-change": {
        // `<taskId> U1`…`U4`, `V1`…`V4` or `R` (novicezk `ConvertUtils.convertChangeParams`).
        const content = body.content
        const match = typeof content === "string" ? /^(\S{1,100}) (?:([UV])([1-4])|R)$/i.exec(content.trim()) : null
        if (match === null) return yield* bad('content must be "<taskId> U1" to U4, V1 to V4, or R.', "content")
        const action = match[2] === undefined ? "REROLL" : match[2].toUpperCase() === "U" ? "UPSCALE" : "VARIATION"
        const index = match[3] === undefined ? undefined : Number(match[3])
        return { kind: "change", ...yield* commonOf(body), taskId: match[1], action, index }
      }
      case "change": {
        const taskId = yield* taskIdOf(body)
        const action = body.action
        if (action !== "UPSCALE" && action !== "VARIATION" && action !== "REROLL") {
          return yield* bad("action must be UPSCALE, VARIATION or REROLL.", "action")
        }
        const index = body.index ?? undefined
        if (
          action !== "REROLL" && !(typeof index === "number" && Number.isInteger(index) && index >= 1 && index <= 4)
        ) {
          return yield* bad("index must be an integer from 1 to 4.", "index")
        }
        return { kind, ...yield* commonOf(body), taskId, action, index: index as number | undefined }
      }
      case "action": {
        const taskId = yield* taskIdOf(body)
        const customId = body.customId
        if (typeof customId !== "string" || customId === "") return yield* bad("customId is required.", "customId")
        if (customId.length > 200 || actionOfCustomId(customId) === undefined) {
          return yield* bad("customId is not a button this gateway knows.", "customId")
        }
        return { kind, ...yield* commonOf(body), taskId, customId }
      }
      case "modal": {
        const taskId = yield* taskIdOf(body)
        const prompt = yield* optionalString(body, "prompt", MAX_PROMPT)
        const mask = body.maskBase64 ?? undefined
        if (mask !== undefined && mask !== "" && !isImageDataUri(mask)) {
          return yield* bad("maskBase64 must be a data:image/...;base64 URI.", "maskBase64")
        }
        return { kind, taskId, prompt, maskBase64: mask === "" ? undefined : mask }
      }
    }
  })

/** The fields of a submit's `Common` that go upstream as given. */
const commonBody = (submit: Common) => ({
  ...(submit.state === undefined ? {} : { state: submit.state }),
  ...(submit.botType === undefined ? {} : { botType: submit.botType })
})

/**
 * The upstream call of `submit`: its path and JSON body, with `upstreamId`
 * (the original task's upstream id) in place of the caller's `taskId`.
 *
 * @category encoding
 */
export const encodeMjSubmit = (
  submit: MjSubmit,
  upstreamId: string | undefined
): { readonly path: string; readonly body: Record<string, unknown> } => {
  switch (submit.kind) {
    case "imagine":
      return {
        path: "/mj/submit/imagine",
        body: {
          prompt: submit.prompt,
          ...(submit.base64Array === undefined ? {} : { base64Array: submit.base64Array }),
          ...commonBody(submit)
        }
      }
    case "blend":
      return {
        path: "/mj/submit/blend",
        body: {
          base64Array: submit.base64Array,
          ...(submit.dimensions === undefined ? {} : { dimensions: submit.dimensions }),
          ...commonBody(submit)
        }
      }
    case "describe":
      return { path: "/mj/submit/describe", body: { base64: submit.base64, ...commonBody(submit) } }
    case "change":
      return {
        path: "/mj/submit/change",
        body: {
          taskId: upstreamId,
          action: submit.action,
          ...(submit.index === undefined ? {} : { index: submit.index }),
          ...commonBody(submit)
        }
      }
    case "action":
      return {
        path: "/mj/submit/action",
        body: { taskId: upstreamId, customId: submit.customId, ...commonBody(submit) }
      }
    case "modal":
      return {
        path: "/mj/submit/modal",
        body: {
          taskId: upstreamId,
          ...(submit.prompt === undefined ? {} : { prompt: submit.prompt }),
          ...(submit.maskBase64 === undefined ? {} : { maskBase64: submit.maskBase64 })
        }
      }
  }
}

/** A task id worth keeping from an upstream (what the proxies make: digits, letters, `._-`). */
const plausibleUpstreamId = (value: unknown): value is string =>
  typeof value === "string" && /^[A-Za-z0-9._-]{1,100}$/.test(value)

const codeOf = (json: unknown): number | undefined => {
  const code = typeof json === "object" && json !== null ? (json as Record<string, unknown>).code : undefined
  return typeof code === "number" && Number.isInteger(code) ? code : undefined
}

/** How a refusal code reads: its failure kind and the caller-safe message (`ReturnCode`). */
const refusalOf = (code: number | undefined, description: string): {
  readonly kind: UpstreamFailureKind
  readonly status: number
  readonly message: string
} => {
  switch (code) {
    case 4:
      return { kind: "rejected", status: 400, message: description || "The upstream refused the request." }
    case 24:
      return { kind: "rejected", status: 400, message: "The upstream refused the prompt as possibly sensitive." }
    case 23:
      return { kind: "throttled", status: 429, message: "The upstream's queue is full." }
    case 3:
      return { kind: "server", status: 503, message: "The upstream had no account or task to run it on." }
    default:
      return { kind: "server", status: 502, message: "The upstream failed to submit the task." }
  }
}

/**
 * Reads a submit answer (`{code, description, result, properties}`, HTTP 200
 * whatever the code): the upstream task id and code for 1, 21 and 22, else the
 * `UpstreamFailed` the code means (4 and 24 `rejected`, 23 `throttled`, 3 and
 * others `server`; `bad-body` for an answer that is not one).
 *
 * @category decoding
 */
export const decodeMjSubmitAnswer = (
  json: unknown,
  channelId: number
): { readonly upstreamId: string; readonly code: 1 | 21 | 22 } | UpstreamFailed => {
  const code = codeOf(json)
  const body = (typeof json === "object" && json !== null ? json : {}) as Record<string, unknown>
  if (code === 1 || code === 21 || code === 22) {
    return plausibleUpstreamId(body.result)
      ? { upstreamId: body.result, code }
      : new UpstreamFailed({ kind: "bad-body", status: 200, message: "The upstream gave no task id.", channelId })
  }
  if (code === undefined) {
    return new UpstreamFailed({
      kind: "bad-body",
      status: 200,
      message: "The upstream answer is not a submit result.",
      channelId
    })
  }
  const description = typeof body.description === "string" ? safeVendorText(body.description, 300) : ""
  return new UpstreamFailed({ ...refusalOf(code, description), channelId })
}

/**
 * Classifies a non-2xx answer of a proxy from its status and, when the body
 * is the proxy's `{code, description}`, that code: 401/403 `unauthorized`
 * (a wrong `mj-api-secret`), 429 `throttled`, 5xx `server`, other 4xx
 * `rejected` (or as the code says).
 *
 * @category decoding
 */
export const classifyMjError = (
  status: number,
  text: string
): { readonly kind: UpstreamFailureKind; readonly message: string } => {
  if (status === 401 || status === 403) return { kind: "unauthorized", message: `Upstream answered HTTP ${status}` }
  if (status === 429) return { kind: "throttled", message: "The upstream is busy." }
  if (status >= 500) return { kind: "server", message: `Upstream answered HTTP ${status}` }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  const code = codeOf(json)
  const description = typeof (json as { description?: unknown } | undefined)?.description === "string"
    ? safeVendorText((json as { description: string }).description, 300)
    : ""
  if (code !== undefined) {
    const refusal = refusalOf(code, description)
    return { kind: refusal.kind, message: refusal.message }
  }
  return { kind: "rejected", message: description || `Upstream answered HTTP ${status}` }
}

/** One button of a finished task, as Discord gives it and callers send back as `customId`. @category models */
export interface MjButton {
  readonly customId: string
  readonly emoji: string
  readonly label: string
  readonly type: number
  readonly style: number
}

/**
 * What a caller is shown of a task beyond its status: kept from the
 * upstream's task object (bounded, the image URL left out).
 *
 * @category models
 */
export interface MjTaskDetail {
  readonly prompt: string
  readonly promptEn: string
  readonly description: string
  readonly startTime: number
  readonly finishTime: number
  readonly buttons: ReadonlyArray<MjButton>
  readonly finalPrompt: string
}

/** What one poll of an upstream task says. @category models */
export interface MjPoll {
  readonly status: TaskStatus
  /** Percent, 0–100. */
  readonly progress: number
  /** The upstream's image URL on `SUCCESS` (private: never shown to a caller). */
  readonly imageUrl: string | undefined
  /** The caller-safe failure reason on `FAILURE`. */
  readonly failReason: string | undefined
  readonly detail: MjTaskDetail
}

const text = (value: unknown, max: number): string => typeof value === "string" ? safeVendorText(value, max) : ""
const time = (value: unknown): number =>
  typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : 0

/** The upstream statuses and what they are here; an unknown one is still running. */
const STATUSES: Record<string, TaskStatus> = {
  NOT_START: "queued",
  SUBMITTED: "queued",
  MODAL: "queued",
  IN_PROGRESS: "in_progress",
  SUCCESS: "completed",
  FAILURE: "failed",
  CANCEL: "failed"
}

const buttonsOf = (value: unknown): ReadonlyArray<MjButton> =>
  (Array.isArray(value) ? value : []).slice(0, 50).flatMap((item): ReadonlyArray<MjButton> => {
    if (typeof item !== "object" || item === null) return []
    const button = item as Record<string, unknown>
    const customId = button.customId
    if (typeof customId !== "string" || customId.length > 200 || actionOfCustomId(customId) === undefined) return []
    return [{
      customId,
      emoji: text(button.emoji, 20),
      label: text(button.label, 100),
      type: typeof button.type === "number" ? button.type : 2,
      style: typeof button.style === "number" ? button.style : 2
    }]
  })

/**
 * Reads an upstream task object (`GET /mj/task/{id}/fetch`); `undefined` when
 * it is not one.
 *
 * @category decoding
 */
export const decodeMjTask = (json: unknown): MjPoll | undefined => {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined
  const task = json as Record<string, unknown>
  if (typeof task.status !== "string") return undefined
  const status = STATUSES[task.status] ?? "in_progress"
  const percent = typeof task.progress === "string" ? /^(\d{1,3})%$/.exec(task.progress.trim())?.[1] : undefined
  const progress = status === "completed" ? 100 : Math.min(99, Number(percent ?? 0))
  const imageUrl = typeof task.imageUrl === "string" && /^https?:\/\/\S{1,2040}$/.test(task.imageUrl)
    ? task.imageUrl
    : undefined
  const properties = typeof task.properties === "object" && task.properties !== null
    ? task.properties as Record<string, unknown>
    : {}
  return {
    status,
    progress,
    imageUrl: status === "completed" ? imageUrl : undefined,
    failReason: status === "failed"
      ? text(task.failReason, 500) || "The upstream could not make the image."
      : undefined,
    detail: {
      prompt: text(task.prompt, MAX_PROMPT),
      promptEn: text(task.promptEn, MAX_PROMPT),
      description: text(task.description, 2000),
      startTime: time(task.startTime),
      finishTime: time(task.finishTime),
      buttons: status === "completed" ? buttonsOf(task.buttons) : [],
      finalPrompt: text(properties.finalPrompt, MAX_PROMPT)
    }
  }
}

/** The proxy's status word of a stored status. @category encoding */
export const mjStatusOf = (status: TaskStatus): string => {
  switch (status) {
    case "queued":
      return "SUBMITTED"
    case "in_progress":
      return "IN_PROGRESS"
    case "completed":
      return "SUCCESS"
    case "failed":
      return "FAILURE"
  }
}

/** What the public task object is made from (a stored task, seen by its owner). @category models */
export interface MjTaskView {
  readonly id: string
  readonly action: string
  readonly customId: string
  readonly botType: string
  readonly prompt: string
  readonly state: string
  readonly status: TaskStatus
  readonly progress: number
  readonly submitTime: number
  readonly finishTime: number | null
  /** The gateway's image URL, when the task made an image. */
  readonly imageUrl: string
  readonly failReason: string
  readonly detail: MjTaskDetail | undefined
}

/**
 * The task object a caller gets (`GET /mj/task/{id}/fetch`, each item of
 * `list-by-condition`), in the proxy's shape; the id is the public id and the
 * image URL the gateway's.
 *
 * @category encoding
 */
export const encodeMjTask = (view: MjTaskView): Record<string, unknown> => {
  const detail = view.detail
  const prompt = detail?.prompt || view.prompt
  return {
    id: view.id,
    action: view.action,
    customId: view.customId,
    botType: view.botType,
    prompt,
    promptEn: detail?.promptEn || prompt,
    description: detail?.description ?? "",
    state: view.state,
    submitTime: view.submitTime,
    startTime: detail?.startTime ?? 0,
    finishTime: detail?.finishTime || view.finishTime || 0,
    imageUrl: view.imageUrl,
    status: mjStatusOf(view.status),
    progress: `${view.status === "completed" ? 100 : Math.max(0, Math.min(99, Math.round(view.progress)))}%`,
    failReason: view.failReason,
    buttons: detail?.buttons ?? [],
    maskBase64: "",
    properties: { finalPrompt: detail?.finalPrompt || prompt, finalZhPrompt: "" }
  }
}

/**
 * The proxy's code for a failure: 3 not found (404), 23 busy (429), 9 the
 * gateway's or upstream's fault (5xx), 4 every other (validation, key, quota).
 *
 * @category encoding
 */
export const mjCodeOf = (problem: Problem): number =>
  problem.status === 404 ? 3 : problem.status === 429 ? 23 : problem.status >= 500 ? 9 : 4

/**
 * A failure in the proxy's envelope: `{code, description, result: null,
 * properties: {}}` (`SubmitResultVO`) with the gateway's `type` (the error
 * code of the spec's table) and `param` (the offending field, or empty) added,
 * sent with the problem's HTTP status (as new-api's relay answers).
 *
 * @category encoding
 */
export const encodeMjError = (problem: Problem): Record<string, unknown> => ({
  code: mjCodeOf(problem),
  description: problem.message,
  result: null,
  properties: {},
  type: problem.code,
  param: problem.param
})
