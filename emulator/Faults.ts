/**
 * Vendor-shaped error bodies and fault matching for the vendor emulator.
 *
 * Error shapes:
 * - OpenAI `{error: {message, type, param, code}}`
 *   (https://platform.openai.com/docs/guides/error-codes; `openai` SDK `APIError`).
 * - Anthropic `{type: "error", error: {type, message}, request_id}`
 *   (https://docs.anthropic.com/en/api/errors; `@anthropic-ai/sdk` `ErrorResponse` / `ErrorType`).
 * - Gemini `{error: {code, message, status}}` with google.rpc status names
 *   (https://ai.google.dev/gemini-api/docs/troubleshooting).
 * - Kling `{code, message, request_id}` with its service codes (`VideosKling.ts`).
 * - Azure OpenAI: its gateway's `{error: {code: "<status>", message}}` for 401, 403, 404 and 429, OpenAI's shape
 *   otherwise (`Azure.ts`).
 * - Midjourney-proxy `{code, description, result: null}` (novicezk/midjourney-proxy `SubmitResultVO`,
 *   `ReturnCode`: 3 not found, 4 validation error, 9 failure, 23 queue full).
 * - Bedrock `{message}` with its exception named in the `x-amzn-ErrorType` header (`BedrockWire.ts`).
 *
 * @since 0.1.0
 */

import { klingCodeOf, klingErrorBody } from "./VideosKling.ts"

/** A scripted failure applied to matching requests before normal handling. @category models */
export interface Fault {
  readonly match?: {
    /** Substring of the URL path. */
    readonly path?: string
    readonly model?: string
    readonly key?: string
  }
  /** How many matching requests it applies to (default: unlimited). */
  readonly times?: number
  /**
   * Answer this HTTP status with an error body in the vendor's own error shape. With `breakAfterEvents`
   * on a stream request: 200, N events, then this error as the vendor's in-band stream error event.
   */
  readonly status?: number
  /** Override that error body (JSON). */
  readonly body?: unknown
  /** Error message used in the vendor-shaped body. */
  readonly message?: string
  /** Delay before the first byte (status line), in milliseconds. */
  readonly delayMs?: number
  /** Never answer (until the client aborts or the emulator closes). */
  readonly hang?: boolean
  /** Stream: send N events, then break the connection (no end marker). Non-stream: half the JSON, then break. */
  readonly breakAfterEvents?: number
  /** Stream: send N events, then go silent with the connection open (until the client aborts). */
  readonly stallAfterEvents?: number
  /** 200 with a body that is not valid JSON / not valid events. */
  readonly malformed?: boolean
  /**
   * With `status`: the error message quotes a value the caller sent, as vendors do (see `Faults.echoedValue`):
   * `"text"` the longest string in the body, `"field"` the first top-level field name that is not a plain
   * identifier, `"key"` the API key of the request. `{echo}` in `message` marks where; without it the value is
   * appended to the message.
   */
  readonly echo?: EchoSource
  /** Stream: pause this many milliseconds between events (this request only; overrides the emulator's pacing). */
  readonly paceMs?: number
  /** Stream: send N events, then end the body cleanly without the format's end marker (a stream cut short). */
  readonly endAfterEvents?: number
  /**
   * Bedrock, with `status`: the exception to answer (its `x-amzn-ErrorType`, or in a stream its `:exception-type`),
   * e.g. `ModelNotReadyException` or `ServiceQuotaExceededException`; by default the one the status stands for
   * (`BedrockWire.bedrockExceptionOf`, in a stream `bedrockStreamExceptionOf`).
   */
  readonly errorType?: string
}

/** The wire families the emulator speaks. @category models */
export type Vendor = "openai" | "anthropic" | "gemini" | "midjourney" | "kling" | "bedrock" | "azure"

const openAiTypes: Record<number, readonly [type: string, code: string | null]> = {
  400: ["invalid_request_error", null],
  401: ["invalid_request_error", "invalid_api_key"],
  403: ["invalid_request_error", "unsupported_country_region_territory"],
  404: ["invalid_request_error", "model_not_found"],
  409: ["invalid_request_error", null],
  413: ["invalid_request_error", null],
  422: ["invalid_request_error", null],
  429: ["requests", "rate_limit_exceeded"]
}

const anthropicTypes: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error"
}

const geminiStatuses: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  409: "ABORTED",
  413: "INVALID_ARGUMENT",
  422: "INVALID_ARGUMENT",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED"
}

const defaultMessages: Record<number, string> = {
  400: "The request is invalid.",
  401: "Invalid API key provided.",
  403: "Permission denied.",
  404: "The requested resource was not found.",
  413: "Request too large.",
  422: "The request could not be processed.",
  429: "Rate limit reached. Please try again later.",
  500: "The server had an error while processing your request.",
  502: "Bad gateway.",
  503: "The service is temporarily unavailable.",
  504: "The request timed out.",
  529: "Overloaded"
}

/** Default message for an HTTP status. @category errors */
export const defaultMessage = (status: number): string =>
  defaultMessages[status] ?? (status >= 500 ? "The server had an error." : "The request failed.")

let requestCounter = 0

/**
 * The error body a vendor sends for `status`, with `message` and optionally the offending `param`
 * (OpenAI only carries `param`; the others fold it into the message by caller convention).
 *
 * @category errors
 */
export const vendorErrorBody = (vendor: Vendor, status: number, message?: string, param?: string): unknown => {
  const text = message ?? defaultMessage(status)
  switch (vendor) {
    case "openai": {
      const [type, code] = openAiTypes[status] ?? [status >= 500 ? "server_error" : "invalid_request_error", null]
      return { error: { message: text, type, param: param ?? null, code } }
    }
    case "anthropic":
      return {
        type: "error",
        error: {
          type: anthropicTypes[status] ?? (status >= 500 ? "api_error" : "invalid_request_error"),
          message: text
        },
        request_id: `req_emu${(++requestCounter).toString().padStart(8, "0")}`
      }
    case "gemini":
      return {
        error: {
          code: status,
          message: text,
          status: geminiStatuses[status] ?? (status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION")
        }
      }
    case "midjourney":
      return {
        code: status === 404 ? 3 : status === 429 ? 23 : status >= 500 ? 9 : 4,
        description: text,
        result: null
      }
    case "kling":
      return klingErrorBody(klingCodeOf(status), text)
    case "bedrock":
      return { message: text }
    case "azure":
      // Azure's own gateway errors (key, route, rate) are `{error: {code, message}}` with the status as the code;
      // the model's own refusals are OpenAI's shape.
      if (status === 401 || status === 403 || status === 404 || status === 429) {
        return { error: { code: String(status), message: text } }
      }
      return vendorErrorBody("openai", status, message, param)
  }
}

/**
 * The vendor's "quota exhausted" error: HTTP status and body. Use as a fault:
 * `{status: q.status, body: q.body}`.
 * OpenAI: 429 `insufficient_quota` (the gateway's structured signal for a spent account); Anthropic: 400
 * `invalid_request_error` "credit balance is too low", whose only sign is its text, so the gateway treats it as a
 * request error and disables no key on it (a `billing_error` type is the structured signal); Gemini: 429
 * `RESOURCE_EXHAUSTED` with a `QuotaFailure` naming no per-day or zero quota, which the gateway treats as
 * throttling; Bedrock: 429 `ThrottlingException` "Too many tokens, please wait before trying again." (its token
 * quota per minute; Bedrock bills an AWS account afterwards, so there is no balance to run out of).
 *
 * @category errors
 */
export const quotaExhausted = (vendor: Vendor): { readonly status: number; readonly body: unknown } => {
  switch (vendor) {
    case "openai":
      return {
        status: 429,
        body: {
          error: {
            message: "You exceeded your current quota, please check your plan and billing details.",
            type: "insufficient_quota",
            param: null,
            code: "insufficient_quota"
          }
        }
      }
    case "anthropic":
      return {
        status: 400,
        body: {
          type: "error",
          error: {
            type: "invalid_request_error",
            message: "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing."
          },
          request_id: null
        }
      }
    case "gemini":
      return {
        status: 429,
        body: {
          error: {
            code: 429,
            message: "You exceeded your current quota, please check your plan and billing details.",
            status: "RESOURCE_EXHAUSTED",
            details: [{
              "@type": "type.googleapis.com/google.rpc.QuotaFailure",
              violations: [{ quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests" }]
            }]
          }
        }
      }
    case "midjourney":
      // The proxy answers 200 with code 3 when none of its Discord accounts can take work (new-api disables the
      // channel on it).
      return { status: 200, body: { code: 3, description: "No available account instance", result: null } }
    case "kling":
      // Kling: 429 with service code 1102, "resource pack depleted or expired".
      return { status: 429, body: klingErrorBody(1102, "Resource pack depleted or expired") }
    case "bedrock":
      // Bedrock has no prepaid balance to spend: an account over its token quota is throttled (ThrottlingException).
      return { status: 429, body: { message: "Too many tokens, please wait before trying again." } }
    case "azure":
      // Azure has no prepaid credit: a deployment out of its tokens-per-minute quota answers 429, code "429".
      return {
        status: 429,
        body: {
          error: {
            code: "429",
            message: "Requests to the ChatCompletions_Create Operation have exceeded the token rate limit of your " +
              "current pricing tier. Please retry after 60 seconds."
          }
        }
      }
  }
}

/** What a request offers to fault matching. @category models */
export interface FaultTarget {
  readonly path: string
  readonly model: string | undefined
  readonly key: string | undefined
}

/** A fault plus how many more requests it may hit (`Infinity` when unlimited). @category models */
export interface ArmedFault {
  readonly fault: Fault
  remaining: number
}

/** Arms faults for matching: copies their `times` budget. @category faults */
export const armFaults = (faults: ReadonlyArray<Fault>): Array<ArmedFault> =>
  faults.map((fault) => ({ fault, remaining: fault.times ?? Infinity }))

const matches = (fault: Fault, target: FaultTarget): boolean => {
  const match = fault.match
  if (match === undefined) return true
  if (match.path !== undefined && !target.path.includes(match.path)) return false
  if (match.model !== undefined && match.model !== target.model) return false
  if (match.key !== undefined && match.key !== target.key) return false
  return true
}

/** Takes the first armed fault matching `target` that has budget left, spending one use of it. @category faults */
export const takeFault = (armed: ReadonlyArray<ArmedFault>, target: FaultTarget): Fault | undefined => {
  for (const entry of armed) {
    if (entry.remaining > 0 && matches(entry.fault, target)) {
      entry.remaining--
      return entry.fault
    }
  }
  return undefined
}

/**
 * What a fault's error message quotes from the request (`Fault.echo`): vendors name the offending value in
 * their 400s (OpenAI "Unrecognized request argument supplied: <name>", Gemini `Unknown name "<name>"`), and
 * some 401s name the key they were given (OpenAI "Incorrect API key provided: sk-…").
 *
 * @category models
 */
export type EchoSource = "text" | "field" | "key"

/** The most characters an echoed value keeps (cut by UTF-16 unit, so a cut may leave a lone surrogate). */
const ECHO_LIMIT = 2_000

const longestString = (value: unknown, best: string): string => {
  if (typeof value === "string") return value.length > best.length ? value : best
  if (Array.isArray(value)) return value.reduce<string>((found, item) => longestString(item, found), best)
  if (typeof value === "object" && value !== null) {
    return Object.values(value).reduce<string>((found, item) => longestString(item, found), best)
  }
  return best
}

const plainIdentifier = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * The caller-supplied value `source` names, taken from the parsed request `body` and its `key`: `"text"` the
 * longest string anywhere in the body, `"field"` the first top-level field name that is not a plain identifier
 * (no real field of the three APIs is one; else the first field), `"key"` the request's API key. At most
 * 2,000 UTF-16 units, quoted as sent: NUL, lone surrogates and key-like text included.
 *
 * @category faults
 */
export const echoedValue = (source: EchoSource, body: unknown, key: string | undefined): string => {
  switch (source) {
    case "text":
      return longestString(body, "").slice(0, ECHO_LIMIT)
    case "field": {
      const names = typeof body === "object" && body !== null && !Array.isArray(body) ? Object.keys(body) : []
      return (names.find((name) => !plainIdentifier.test(name)) ?? names[0] ?? "").slice(0, ECHO_LIMIT)
    }
    case "key":
      return (key ?? "").slice(0, ECHO_LIMIT)
  }
}

/**
 * A fault's error message with its echoed value: `{echo}` in `fault.message` is replaced by it, or, without
 * the marker, it is appended after the message (the status's default message when none is set).
 *
 * @category faults
 */
export const echoMessage = (fault: Fault, body: unknown, key: string | undefined): string | undefined => {
  if (fault.echo === undefined) return fault.message
  const value = echoedValue(fault.echo, body, key)
  const message = fault.message ?? defaultMessage(fault.status ?? 400)
  return message.includes("{echo}") ? message.replaceAll("{echo}", () => value) : `${message} ${value}`
}
