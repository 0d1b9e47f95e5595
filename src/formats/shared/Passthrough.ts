/**
 * Building blocks of the formats' passthrough halves (`Passthrough` in
 * `Format.ts`): a same-format body is copied, never changed in place, and only
 * the fields the gateway needs are set.
 *
 * @since 0.1.0
 */
import type { Request } from "../../canonical/Request.ts"
import type { StreamPart } from "../../canonical/StreamPart.ts"
import type { Passthrough, PassthroughTarget } from "../Format.ts"

/**
 * What a format's passthrough body needs: whether the model is in the body,
 * the fields that hold a caller's output limit, the field the held cap goes in
 * (`undefined`: none), whether the format has a top-level `store` (OpenAI's
 * chat completions and Responses; default false), and the format's in-place
 * media inliner (`InlineMedia.ts`; none for a format without media).
 *
 * @category passthrough
 */
export interface PassthroughOptions {
  readonly model: boolean
  readonly limitFields: ReadonlyArray<string>
  readonly cap: string | undefined
  readonly store?: boolean | undefined
  readonly inlineMedia?: ((raw: Record<string, unknown>, inlined: Request) => Record<string, unknown>) | undefined
}

/**
 * The caller's body with the model mapped and, when `cap` names a field and
 * the caller set none of `limitFields`, the output cap in `cap` (a dotted path
 * such as `generationConfig.maxOutputTokens` for nested objects). `model:
 * false` leaves the model alone (generate-content carries it in the path).
 * With `store: true`, the caller's `store` is left out when the channel does
 * not forward it (`target.forwardStore === false`).
 *
 * @category passthrough
 */
export const passthroughBody = (
  raw: Record<string, unknown>,
  target: PassthroughTarget,
  options: PassthroughOptions
): Record<string, unknown> => {
  const body: Record<string, unknown> = { ...raw }
  if (options.model) body.model = target.model
  if (options.store === true && target.forwardStore === false) delete body.store
  if (
    options.cap !== undefined && target.outputCap !== undefined && !options.limitFields.some((field) => has(raw, field))
  ) {
    setPath(body, options.cap.split("."), target.outputCap)
  }
  return body
}

/** Whether the dotted `path` holds a value other than null in `value`. */
const has = (value: Record<string, unknown>, path: string): boolean => {
  let current: unknown = value
  for (const key of path.split(".")) {
    if (typeof current !== "object" || current === null || Array.isArray(current)) return false
    current = (current as Record<string, unknown>)[key]
  }
  return current !== undefined && current !== null
}

/** Sets `path` in `body`, copying every object on the way (the caller's objects are never changed). */
const setPath = (body: Record<string, unknown>, path: ReadonlyArray<string>, value: unknown): void => {
  let current = body
  for (const key of path.slice(0, -1)) {
    const next = current[key]
    const copy = typeof next === "object" && next !== null && !Array.isArray(next)
      ? { ...(next as Record<string, unknown>) }
      : {}
    current[key] = copy
    current = copy
  }
  current[path[path.length - 1]] = value
}

/**
 * The passthrough half of a format whose streams report usage without being
 * asked and never carry an event the caller did not ask for. `inlineMedia` is
 * the format's in-place inliner (`InlineMedia.ts`); none for a format without
 * media.
 *
 * @category passthrough
 */
export const plainPassthrough = (options: PassthroughOptions): Passthrough => ({
  body: (raw, target) => passthroughBody(raw, target, options),
  inlineMedia: options.inlineMedia ?? ((raw) => raw),
  wantsStreamUsage: () => false,
  hides: () => false
})

/**
 * Whether an event decoded into nothing but usage (a usage-only chunk).
 *
 * @category passthrough
 */
export const usageOnly = (parts: ReadonlyArray<StreamPart>): boolean => {
  if (parts.length === 0) return false
  for (const part of parts) if (part._tag !== "UsageUpdate") return false
  return true
}
