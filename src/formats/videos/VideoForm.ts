/**
 * A `multipart/form-data` video body (as the official `openai` SDK's
 * `videos.create` sends it) turned into the raw record `decodeVideoRequest`
 * (`RequestDecoder.ts`) reads: nested keys `input_reference[image_url]` and
 * `metadata[key]`, lists `images[]`, and uploaded images as `data:` URIs.
 * Every refusal is an `InvalidRequest` naming the form field.
 *
 * @since 0.1.0
 */
import { Effect, Result } from "effect"
import type { InvalidRequest } from "../../errors/GatewayError.ts"
import { quote } from "./request/MediaRefs.ts"
import { MINI_CODE, refusal } from "./request/VideoFields.ts"
import { defaultVideoFamily, MAX_INLINE_IMAGE_CHARS, type VideoFamily } from "./VideoFamilies.ts"

/** The most entries a video form may have. @category rules */
export const MAX_FORM_FIELDS = 256

/** Image types an uploaded reference may have (the `openai` videos API takes JPEG, PNG and WebP). */
const UPLOAD_TYPES = ["image/png", "image/jpeg", "image/webp"]

/** The fields a generic-family upload may come in (`input_reference`, as the SDK sends it; `image`). */
const UPLOAD_FIELDS = ["input_reference", "image"]

type Refused<A> = Result.Result<A, InvalidRequest>

const refuse = (message: string, param: string, code?: string): Refused<never> =>
  Result.fail(refusal(message, param, code))

/** `name[a][]` → `["name", "a", ""]`, or `undefined` for a name that is not of that shape. */
const keyPath = (name: string): ReadonlyArray<string> | undefined => {
  const match = /^([A-Za-z0-9_.-]{1,64})((?:\[[A-Za-z0-9_.-]{0,64}\]){0,3})$/.exec(name)
  if (match === null) return undefined
  return [match[1], ...Array.from(match[2].matchAll(/\[([^\]]*)\]/g), (m) => m[1])]
}

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"])

/** Sets `value` at `path` in `target` (`""` appends to an array). */
const setPath = (
  target: Record<string, unknown>,
  path: ReadonlyArray<string>,
  value: unknown,
  name: string
): Refused<void> => {
  let node: Record<string, unknown> | Array<unknown> = target
  for (let index = 0; index < path.length; index++) {
    const key = path[index]
    const last = index === path.length - 1
    const nextIsAppend = !last && path[index + 1] === ""
    if (Array.isArray(node)) {
      if (key !== "") return refuse(`The form field ${quote(name)} mixes list and object keys.`, path[0])
      if (!last) return refuse(`The form field ${quote(name)} nests too deep.`, path[0])
      node.push(value)
      return Result.void
    }
    if (key === "" || FORBIDDEN_KEYS.has(key)) {
      return refuse(`The form field ${quote(name)} is not a valid name.`, path[0])
    }
    if (last) {
      if (Object.hasOwn(node, key)) return refuse(`The form field ${quote(name)} is given twice.`, path[0])
      node[key] = value
      return Result.void
    }
    const existing: unknown = Object.hasOwn(node, key) ? node[key] : undefined
    if (existing === undefined) {
      const created: Record<string, unknown> | Array<unknown> = nextIsAppend ? [] : {}
      node[key] = created
      node = created
    } else if (typeof existing === "object" && existing !== null && Array.isArray(existing) === nextIsAppend) {
      node = existing as Record<string, unknown> | Array<unknown>
    } else {
      return refuse(`The form field ${quote(name)} conflicts with another field.`, path[0])
    }
  }
  return Result.void
}

/** An uploaded image as a data URI. */
const dataUriOfFile = async (file: File): Promise<string> => {
  const bytes = new Uint8Array(await file.arrayBuffer())
  let binary = ""
  for (let start = 0; start < bytes.length; start += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(start, start + 0x8000))
  }
  return `data:${file.type};base64,${btoa(binary)}`
}

/** An uploaded file of the form, waiting to be read. */
interface Upload {
  readonly field: string
  readonly file: File
}

/** The form's text fields set in place, its files checked and set aside (their fields hold `""` until read). */
const checkForm = (
  entries: ReadonlyArray<readonly [string, FormDataEntryValue]>,
  rules: VideoFamily
): Refused<{ readonly fields: Record<string, unknown>; readonly uploads: ReadonlyArray<Upload> }> =>
  Result.gen(function* () {
    if (entries.length > MAX_FORM_FIELDS) {
      return yield* refuse(`The form has ${entries.length} fields; at most ${MAX_FORM_FIELDS} are allowed.`, "")
    }
    const fields: Record<string, unknown> = {}
    const uploads: Array<Upload> = []
    for (const [name, value] of entries) {
      const path = keyPath(name)
      if (path === undefined) {
        return yield* refuse(`The form field ${quote(name)} is not a valid name.`, name.slice(0, 64))
      }
      const field = path[0]
      if (typeof value === "string") {
        yield* setPath(fields, path, value, name)
        continue
      }
      if (rules !== "openai-video" || !UPLOAD_FIELDS.includes(field) || path.length > 1) {
        return yield* refuse(
          `${field} cannot be an uploaded file${
            rules === "openai-video" ? "" : ": give a public http(s):// URL or asset://<id>"
          }.`,
          field,
          rules === "mini-2.0" ? MINI_CODE : undefined
        )
      }
      if (!UPLOAD_TYPES.includes(value.type)) {
        return yield* refuse(
          `${field} must be a PNG, JPEG or WebP image; got ${quote(value.type || "no type")}.`,
          field
        )
      }
      const most = Math.floor(MAX_INLINE_IMAGE_CHARS * 3 / 4) - 64
      if (value.size > most) {
        return yield* refuse(`${field} is ${value.size} bytes; at most ${most} are allowed.`, field)
      }
      yield* setPath(fields, path, "", name)
      uploads.push({ field, file: value })
    }
    return { fields, uploads }
  })

/**
 * A `multipart/form-data` video body turned into the raw record
 * `decodeVideoRequest` reads. Text fields stay text (`seconds` stays the
 * string the SDK sends). A file is accepted only for the generic family
 * (`openai-video`) in `input_reference` or `image`, as a PNG, JPEG or WebP
 * image of at most 3/4 of `MAX_INLINE_IMAGE_CHARS` bytes, and becomes a
 * `data:` URI; any other file is an `InvalidRequest` naming its field (the
 * first and mini families take public URLs only). `family` is the family of
 * the form's `model` (`undefined`: its default).
 *
 * @category decoding
 */
export const videoFormFields = (
  form: FormData,
  family: VideoFamily | undefined
): Effect.Effect<Record<string, unknown>, InvalidRequest> =>
  Effect.gen(function* () {
    const modelEntry = form.get("model")
    const rules = family ?? defaultVideoFamily(typeof modelEntry === "string" ? modelEntry : "")
    const { fields, uploads } = yield* Effect.fromResult(checkForm(Array.from(form.entries()), rules))
    for (const { field, file } of uploads) {
      fields[field] = yield* Effect.tryPromise({
        try: () => dataUriOfFile(file),
        catch: () => refusal(`${field} could not be read.`, field)
      })
    }
    return fields
  })
