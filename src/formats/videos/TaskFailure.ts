/**
 * What a video wire shows of a vendor's task failure, made safe for a caller:
 * a structured code kept only when it is a plain identifier, a message from
 * vendor text cleaned and bounded, and the shared `content_policy` code for a
 * vendor's moderation refusal (the spec's "States and transitions": a failed
 * task carries `error {code, message}`, e.g. `content_policy`).
 *
 * @since 0.1.0
 */
import { safeVendorText } from "../../domain/Redact.ts"

/** The most characters of a vendor's failure message shown to a caller. @category constants */
export const TASK_MESSAGE_LIMIT = 500

/** The code of a task the vendor's moderation stopped, whatever the vendor calls it. @category constants */
export const CONTENT_POLICY = "content_policy"

const plainCode = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/

/**
 * A failed task's `{code, message}`: `code` when it is a plain identifier (a
 * letter, then at most 63 letters, digits, `_`, `.`, `-`), else `fallbackCode`;
 * `message` through `safeVendorText` (controls dropped, secrets masked) and
 * cut to `TASK_MESSAGE_LIMIT`, else `fallbackMessage` when the vendor gave
 * none.
 *
 * @category constructors
 */
export const taskError = (
  code: string | undefined,
  message: string | undefined,
  fallbackCode: string,
  fallbackMessage: string
): { readonly code: string; readonly message: string } => ({
  code: code !== undefined && plainCode.test(code) ? code : fallbackCode,
  message: message === undefined || message.trim() === ""
    ? fallbackMessage
    : safeVendorText(message, TASK_MESSAGE_LIMIT)
})

/**
 * `url` when it is an absolute `http:` or `https:` URL (the only locations a
 * wire hands on as a task's content), else `undefined`.
 *
 * @category guards
 */
export const httpUrl = (url: string): URL | undefined => {
  if (!URL.canParse(url)) return undefined
  const parsed = new URL(url)
  return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed : undefined
}
