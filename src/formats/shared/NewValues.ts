/**
 * New values of known fields: a role, a reasoning effort, a tool or format type that a format's decoder does not
 * model (the vendor added it after Sluice was written). A same-format channel must still take them as sent (the
 * caller's body is forwarded, docs/ARCHITECTURE.md "Formats and the canonical form"), so a decoder sets them aside
 * before decoding instead of refusing them: the value's element or field is left out of a copy of the body, and a
 * note (`Request.untranslatable`) names it, so a translation is refused by name.
 *
 * @since 0.1.0
 */
import { Result } from "effect"
import type { Untranslatable } from "../../canonical/Request.ts"
import { safeVendorText } from "../../domain/Redact.ts"
import { InvalidRequest } from "../../errors/GatewayError.ts"
import type { Decoded } from "../Format.ts"

/**
 * One position that holds an enumerated string: `path` (object keys; `"*"` right after a top-level array's name
 * for each of its elements), the values the decoder reads, and `cut`, the length of the path prefix that is left
 * out when the value is new (`[name, "*"]`: the whole element; `["tool_choice"]`: the whole field). `when` limits
 * an array position to the elements it holds for (Responses: only message items have a role).
 *
 * @category models
 */
export interface ValuePosition {
  readonly path: ReadonlyArray<string>
  readonly known: ReadonlySet<string>
  readonly cut: number
  readonly when?: ((element: Readonly<Record<string, unknown>>) => boolean) | undefined
}

/**
 * What setting aside gave: the body to decode (the caller's own when nothing was new), the notes, and
 * `renumber`, which turns an element index of the copy in a param or message back into the caller's.
 *
 * @category models
 */
export interface NewValues {
  readonly body: unknown
  readonly notes: ReadonlyArray<Untranslatable>
  readonly renumber: (text: string) => string
  /** A decoding failure of the copy with the caller's indexes. */
  readonly restore: <A>(decoded: Decoded<A>) => Decoded<A>
}

const objectOf = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined

/** The value at `path` (from its element `from` on) inside `value` (objects only). */
const at = (value: unknown, path: ReadonlyArray<string>, from = 0): unknown => {
  let current = value
  for (let index = from; index < path.length; index++) {
    const object = objectOf(current)
    if (object === undefined) return undefined
    current = object[path[index]]
  }
  return current
}

/** `value` without the field at `path` (objects copied along the way; `value` itself left as it is). */
const without = (value: Record<string, unknown>, path: ReadonlyArray<string>): Record<string, unknown> => {
  const [head, ...rest] = path
  if (head === undefined) return value
  const copy = { ...value }
  if (rest.length === 0) {
    delete copy[head]
    return copy
  }
  const inner = objectOf(copy[head])
  if (inner !== undefined) copy[head] = without(inner, rest)
  return copy
}

const param = (path: ReadonlyArray<string>, index?: number): string =>
  path.map((key) => key === "*" ? `[${index}]` : key).join(".").replaceAll(".[", "[")

/** A string not among `known` (anything else is left to the decoder to judge). */
const isNew = (known: ReadonlySet<string>, value: unknown): value is string =>
  typeof value === "string" && !known.has(value)

/**
 * The note for a new value at `param`, for a channel of `format` (the format's name as a reader knows it).
 *
 * @category decoding
 */
export const newValueNote = (param: string, value: string, format: string): Untranslatable => ({
  param,
  message:
    `The value "${
      safeVendorText(value, 40)
    }" of ${param} reaches only a ${format} upstream; this model's channel would need a translation, ` +
    "which cannot carry it."
})

/** The value an array position reads in one element (`undefined` when the element is not one it holds for). */
const elementValue = (position: ValuePosition, element: unknown): unknown => {
  const object = objectOf(element)
  return object !== undefined && (position.when?.(object) ?? true) ? at(object, position.path, 2) : undefined
}

const same = (text: string): string => text
const asDecoded = <A>(decoded: Decoded<A>): Decoded<A> => decoded
const noNotes: ReadonlyArray<Untranslatable> = []

/** `body` as it is: nothing set aside. */
const unchanged = (body: unknown): NewValues => ({ body, notes: noNotes, renumber: same, restore: asDecoded })

/**
 * Sets aside the new values of `positions` in `body` (see the module doc). `format` names the format in the notes.
 *
 * @category decoding
 */
export const setAsideNewValues = (
  body: unknown,
  positions: ReadonlyArray<ValuePosition>,
  format: string
): NewValues => {
  let copy: Record<string, unknown> | undefined = objectOf(body)
  if (copy === undefined) return unchanged(body)
  // Nothing is allocated until a new value is found: most bodies hold none (the hot path).
  let notes: Array<Untranslatable> | undefined
  /** Per top-level array, the caller's index of each kept element. */
  let kept: Map<string, ReadonlyArray<number>> | undefined
  for (const position of positions) {
    const path = position.path
    const name = path[0]
    if (path[1] === "*" && name !== undefined) {
      const elements: unknown = copy[name]
      if (!Array.isArray(elements)) continue
      if (!elements.some((element) => isNew(position.known, elementValue(position, element)))) continue
      const keep: Array<number> = []
      const before = kept?.get(name) ?? elements.map((_, index) => index)
      elements.forEach((element, index) => {
        const value = elementValue(position, element)
        if (isNew(position.known, value)) {
          ;(notes ??= []).push(newValueNote(param(path, before[index]), value, format))
        } else keep.push(index)
      })
      const list: ReadonlyArray<unknown> = elements
      copy = { ...copy, [name]: keep.map((index): unknown => list[index]) }
      ;(kept ??= new Map()).set(name, keep.map((index) => before[index]))
      continue
    }
    const value = at(copy, path)
    if (isNew(position.known, value)) {
      ;(notes ??= []).push(newValueNote(param(path), value, format))
      copy = without(copy, path.slice(0, position.cut))
    }
  }
  if (notes === undefined) return unchanged(body)
  const indexesOf = kept ?? new Map<string, ReadonlyArray<number>>()
  const renumber = (text: string): string => {
    let out = text
    for (const [name, indexes] of indexesOf) {
      out = out.replace(
        new RegExp(`\\b${name}\\[(\\d+)\\]`, "g"),
        (whole, index: string) => indexes[Number(index)] === undefined ? whole : `${name}[${indexes[Number(index)]}]`
      )
    }
    return out
  }
  return {
    body: copy,
    notes,
    renumber,
    restore: <A>(decoded: Decoded<A>): Decoded<A> => {
      if (Result.isSuccess(decoded)) return decoded
      const { message, param, code } = decoded.failure
      return Result.fail(
        new InvalidRequest({
          message: renumber(message),
          ...(param === undefined ? {} : { param: renumber(param) }),
          ...(code === undefined ? {} : { code })
        })
      )
    }
  }
}

/**
 * A decoded request with the notes of `aside` added (the decoder's own notes renumbered to the caller's indexes),
 * or the decoding failure with the caller's indexes.
 *
 * @category decoding
 */
export const withNewValues = <A extends { readonly untranslatable?: ReadonlyArray<Untranslatable> | undefined }>(
  aside: NewValues,
  decoded: Decoded<A>
): Decoded<A> => {
  if (Result.isFailure(decoded)) return aside.restore(decoded)
  if (aside.notes.length === 0) return decoded
  const own = (decoded.success.untranslatable ?? []).map((note) => ({
    param: aside.renumber(note.param),
    message: aside.renumber(note.message)
  }))
  return Result.succeed({ ...decoded.success, untranslatable: [...aside.notes, ...own] })
}
