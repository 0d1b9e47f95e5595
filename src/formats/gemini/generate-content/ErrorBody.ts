/**
 * Errors in the generate-content format: the caller-facing error body and the
 * classification of an upstream's error answers.
 *
 * The vendor's error body is the Google API error
 * `{error: {code: <HTTP status>, message, status: <RPC status name>, details}}`
 * (cloud.google.com/apis/design/errors; ai.google.dev/gemini-api/docs/troubleshooting).
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"
import { safeVendorText } from "../../../domain/Redact.ts"
import type { UpstreamFailureKind } from "../../../errors/GatewayError.ts"
import type { Problem } from "../../Format.ts"

const rpcStatuses: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  402: "RESOURCE_EXHAUSTED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  408: "DEADLINE_EXCEEDED",
  409: "ABORTED",
  413: "INVALID_ARGUMENT",
  422: "INVALID_ARGUMENT",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  501: "UNIMPLEMENTED",
  502: "UNAVAILABLE",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED"
}

/**
 * The google.rpc status name for an HTTP status (`400` → `INVALID_ARGUMENT`,
 * `401` → `UNAUTHENTICATED`, `429` → `RESOURCE_EXHAUSTED`, `503` →
 * `UNAVAILABLE`, …; the gateway's `402` quota error → `RESOURCE_EXHAUSTED`);
 * unlisted 4xx → `FAILED_PRECONDITION`, unlisted 5xx → `INTERNAL`, anything else
 * → `UNKNOWN`. Source: cloud.google.com/apis/design/errors, "Error codes".
 *
 * @category encoding
 */
export const rpcStatusName = (status: number): string =>
  rpcStatuses[status] ??
    (status >= 400 && status < 500 ? "FAILED_PRECONDITION" : status >= 500 && status < 600 ? "INTERNAL" : "UNKNOWN")

/**
 * One entry of a Google API error's `details`: a `google.rpc.ErrorInfo`
 * (`reason`, `domain`, `metadata`) or a `google.rpc.BadRequest`
 * (`fieldViolations[].field`, `.description`). Source:
 * github.com/googleapis/googleapis google/rpc/error_details.proto.
 *
 * @category models
 */
export type GeminiErrorDetail =
  | {
    readonly "@type": "type.googleapis.com/google.rpc.ErrorInfo"
    readonly reason: string
    readonly domain: string
    readonly metadata: Readonly<Record<string, string>>
  }
  | {
    readonly "@type": "type.googleapis.com/google.rpc.BadRequest"
    readonly fieldViolations: ReadonlyArray<{ readonly field: string; readonly description: string }>
  }

/**
 * The caller-facing Google API error body: `code` is the HTTP status (a
 * number), `status` its google.rpc name, `details` the structured detail.
 *
 * @category models
 */
export interface GeminiErrorResponse {
  readonly error: {
    readonly code: number
    readonly message: string
    readonly status: string
    readonly details: ReadonlyArray<GeminiErrorDetail>
  }
}

/**
 * A spec code (`invalid_api_key`) as an `ErrorInfo.reason`, which Google
 * writes UPPER_SNAKE_CASE matching `[A-Z][A-Z0-9_]+[A-Z0-9]`
 * (google/rpc/error_details.proto); anything that cannot be made to match
 * becomes `UNKNOWN_ERROR`.
 */
const reasonOf = (code: string): string => {
  const reason = code.toUpperCase().replace(/[^A-Z0-9]+/g, "_").replace(/^[^A-Z]+|_+$/g, "").slice(0, 63)
    .replace(/_+$/, "")
  return /^[A-Z][A-Z0-9_]+[A-Z0-9]$/.test(reason) ? reason : "UNKNOWN_ERROR"
}

/**
 * A problem → the caller's error body in Google's own shape
 * (cloud.google.com/apis/design/errors; ai.google.dev/gemini-api/docs/troubleshooting):
 * `{error: {code: <HTTP status>, message, status: <RPC status name>, details}}`.
 * The spec's string code and type ride in a `google.rpc.ErrorInfo`
 * (`reason` = the code upper-cased, `domain` `sluice`, `metadata.code` = the
 * code as written in the spec, `metadata.type` when set); a non-empty `param`
 * becomes a `google.rpc.BadRequest` field violation, where Google names the
 * offending field. Clients that read only `code`/`message`/`status`
 * (`@google/genai`, `@ai-sdk/google`) see a well-formed vendor error.
 *
 * @category encoding
 */
export const encodeGeminiError = (problem: Problem): GeminiErrorResponse => {
  const metadata: Record<string, string> = { code: problem.code }
  if (problem.type !== "") metadata.type = problem.type
  const details: Array<GeminiErrorDetail> = [{
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    reason: reasonOf(problem.code),
    domain: "sluice",
    metadata
  }]
  if (problem.param !== "") {
    details.push({
      "@type": "type.googleapis.com/google.rpc.BadRequest",
      fieldViolations: [{ field: problem.param, description: problem.message }]
    })
  }
  return {
    error: { code: problem.status, message: problem.message, status: rpcStatusName(problem.status), details }
  }
}

/**
 * A problem as an in-band stream error (`data: {"error": …}` in SSE, or an
 * element of the JSON-array stream): the same body as `encodeGeminiError`,
 * whose numeric HTTP `code` `@google/genai` needs to raise an `ApiError`.
 *
 * @category encoding
 */
export const encodeGeminiStreamError = (problem: Problem): GeminiErrorResponse => encodeGeminiError(problem)

/**
 * What Sluice reads of a Google API error body.
 *
 * @category models
 */
export interface GeminiErrorBody {
  readonly code?: number | undefined
  readonly message?: string | undefined
  readonly status?: string | undefined
  /** `reason` of `google.rpc.ErrorInfo` details only (`API_KEY_INVALID`). */
  readonly reasons: ReadonlyArray<string>
  /** `quotaId` of `google.rpc.QuotaFailure` violations (`GenerateRequestsPerDayPerProjectPerModel-FreeTier`). */
  readonly quotaIds: ReadonlyArray<string>
  /** `quotaValue` of `google.rpc.QuotaFailure` violations, as numbers (int64 arrives as a string: `"0"`). */
  readonly quotaValues: ReadonlyArray<number>
}

const strings = (values: ReadonlyArray<unknown>): ReadonlyArray<string> =>
  values.filter((value): value is string => typeof value === "string")

/** Whether a detail is of the google.rpc type `name` (`@type` is `type.googleapis.com/google.rpc.<name>`). */
const isDetail = (name: string) => (detail: { readonly [key: string]: unknown }): boolean =>
  typeof detail["@type"] === "string" && detail["@type"].endsWith(`/google.rpc.${name}`)

const quotaValue = (value: unknown): number | undefined => {
  const number = typeof value === "number"
    ? value
    : typeof value === "string" && /^\d{1,18}$/.test(value)
    ? Number(value)
    : NaN
  return Number.isFinite(number) ? number : undefined
}

/**
 * Reads `{error: {code, message, status, details}}` from a parsed value (also
 * the one-element array a non-SSE stream answer wraps it in); `undefined` when
 * the value is no such body. Reasons are read only from details whose `@type`
 * is `google.rpc.ErrorInfo`, quota ids and values only from
 * `google.rpc.QuotaFailure` violations (googleapis `google/rpc/error_details.proto`).
 *
 * @category decoding
 */
export const readGeminiError = (value: unknown): GeminiErrorBody | undefined => {
  const root = Array.isArray(value) ? value[0] : value
  if (!Predicate.isReadonlyObject(root) || !Predicate.isReadonlyObject(root.error)) return undefined
  const error = root.error
  const details = Array.isArray(error.details) ? error.details.filter(Predicate.isReadonlyObject) : []
  const violations = details
    .filter(isDetail("QuotaFailure"))
    .flatMap((detail) => Array.isArray(detail.violations) ? detail.violations : [])
    .filter(Predicate.isReadonlyObject)
  return {
    code: typeof error.code === "number" ? error.code : undefined,
    message: typeof error.message === "string" ? error.message : undefined,
    status: typeof error.status === "string" ? error.status : undefined,
    reasons: strings(details.filter(isDetail("ErrorInfo")).map((detail) => detail.reason)),
    quotaIds: strings(violations.map((violation) => violation.quotaId)),
    quotaValues: violations.map((violation) => quotaValue(violation.quotaValue)).filter((n) => n !== undefined)
  }
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * Classifies an upstream HTTP error from the status and the structured
 * `error.status` / `error.details`, never from the message (vendors quote
 * callers' fields back in it; cloud.google.com/apis/design/errors,
 * ai.google.dev/gemini-api/docs/troubleshooting):
 * - a `google.rpc.ErrorInfo` detail with reason `API_KEY_INVALID` (the
 *   vendor sends it with 400 `INVALID_ARGUMENT`), 401 and 403 → `unauthorized`;
 * - any other 400 → `rejected` (a 400 never disables a key);
 * - 429 or `RESOURCE_EXHAUSTED` whose `google.rpc.QuotaFailure` names a
 *   per-day quota (`quotaId` containing `PerDay`: it will not clear within a
 *   retry window) or a quota of `quotaValue` 0 (no free tier for the model)
 *   → `quota`; other 429 → `throttled`;
 * - 408 → `timeout`; 5xx → `server`; other statuses → `rejected`.
 *
 * The message is the vendor's own passed through `safeVendorText` (controls
 * dropped, secrets masked, at most 1000 characters), else "Upstream answered
 * HTTP <status>".
 *
 * @category decoding
 */
export const classifyGeminiError = (
  status: number,
  bodyText: string
): { readonly kind: UpstreamFailureKind; readonly message: string } => {
  const body = readGeminiError(parse(bodyText))
  const message = body?.message === undefined ? `Upstream answered HTTP ${status}` : safeVendorText(body.message)
  if ((body?.reasons ?? []).includes("API_KEY_INVALID")) return { kind: "unauthorized", message }
  if (status === 401 || status === 403) return { kind: "unauthorized", message }
  if (status === 400) return { kind: "rejected", message }
  const exhausted = status === 429 || body?.status === "RESOURCE_EXHAUSTED"
  const lasting = (body?.quotaIds ?? []).some((quotaId) => quotaId.includes("PerDay")) ||
    (body?.quotaValues ?? []).includes(0)
  if (exhausted && lasting) return { kind: "quota", message }
  if (status === 429) return { kind: "throttled", message }
  if (status === 408) return { kind: "timeout", message }
  if (status >= 500) return { kind: "server", message }
  return { kind: "rejected", message }
}
