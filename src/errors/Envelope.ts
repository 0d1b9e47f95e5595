/**
 * The one table from the error union to HTTP: status, the spec's `type` and
 * `code` ("Errors" part), a message safe for the caller, and `param`. Each
 * route then renders the problem in its envelope: gateway
 * `{error: {message, type, param, code}}`, flat `{code, message}`, api
 * `{success: false, message}`, or an inbound format's own error shape.
 *
 * @since 0.1.0
 */
import { Match } from "effect"
import type { Problem } from "../domain/Problem.ts"
import { safeVendorText } from "../domain/Redact.ts"
import type { GatewayError, UpstreamFailed } from "./GatewayError.ts"

const problem = (status: number, type: string, code: string, message: string, param = ""): Problem => ({
  status,
  type,
  code,
  message,
  param
})

/**
 * An upstream failure as the caller sees it. The upstream's own words reach
 * the caller only for a request error the caller can fix (`rejected`), and
 * then through `safeVendorText` (secrets masked, controls dropped, at most
 * 1000 characters). Every other kind gets the gateway's fixed message: a key
 * refused (`unauthorized`) or out of credit (`quota`) is the operator's
 * business, a throttling or server message can name the vendor account or
 * organization, and transport failures have nothing to add.
 */
const upstreamProblem = (error: UpstreamFailed): Problem => {
  switch (error.kind) {
    case "rejected":
      // A content refusal keeps its code (Azure's `content_filter`), so a caller can tell it from a bad field.
      return problem(400, "invalid_request_error", error.code ?? "invalid_request", safeVendorText(error.message))
    case "throttled":
      return problem(429, "platform_api_error", "too_many_requests", "The upstream is busy; retry later.")
    case "bad-body":
      return problem(500, "platform_api_error", "bad_response_body", "The upstream answer could not be read.")
    case "timeout":
      return problem(504, "platform_api_error", "upstream_timeout", "The upstream did not answer in time.")
    case "server":
      return problem(
        error.status >= 500 && error.status <= 599 ? error.status : 502,
        "platform_api_error",
        "upstream_error",
        "The upstream failed to answer."
      )
    case "unauthorized":
    case "quota":
      return problem(502, "platform_api_error", "upstream_error", "No upstream channel could serve the request.")
    case "network":
      return problem(502, "platform_api_error", "upstream_error", "The upstream could not be reached.")
    case "stream-broken":
      return problem(502, "platform_api_error", "upstream_error", "The upstream answer broke off before its end.")
    case "copy-failed":
      return problem(
        500,
        "platform_api_error",
        "bad_response",
        "The upstream accepted the request but its answer broke off while it was copied."
      )
  }
}

/**
 * The problem for an error. Total over the union: a new member without a row
 * here does not compile.
 *
 * @category errors
 */
export const toProblem = (error: GatewayError): Problem =>
  Match.valueTags(error, {
    InvalidRequest: (e) => problem(400, "invalid_request_error", e.code ?? "invalid_request", e.message, e.param ?? ""),
    InvalidApiKey: (e) => {
      const detail = {
        missing: "No API key was provided",
        unknown: "The API key is not valid",
        disabled: "The API key is disabled",
        expired: "The API key has expired",
        address: "The API key may not be used from this address"
      }[e.reason]
      return problem(401, "invalid_request_error", "invalid_api_key", `${detail}.`)
    },
    InsufficientQuota: (e) =>
      problem(
        402,
        "platform_api_error",
        "insufficient_user_quota",
        `The ${e.scope} quota is insufficient: ${e.remaining} quota units remain, this request needs up to ${e.required}.`
      ),
    BudgetExceeded: (e) => problem(429, "platform_api_error", "budget_exceeded", e.message),
    ModelNotFound: (e) =>
      e.status === 404
        ? problem(
          404,
          "invalid_request_error",
          "model_not_found",
          `Model "${e.model}" is not available for this key.`,
          "model"
        )
        : problem(503, "", "model_not_found", `Model "${e.model}" is not available for this key.`, "model"),
    ModelNotPriced: (e) =>
      problem(
        400,
        "invalid_request_error",
        "model_price_not_set",
        `Model "${e.model}" has no price configured.`,
        "model"
      ),
    RateLimited: (e) => problem(429, "platform_api_error", "too_many_requests", e.message),
    PayloadTooLarge: (e) =>
      e.param === undefined
        ? problem(413, "invalid_request_error", "request_too_large", `The request body exceeds ${e.limitBytes} bytes.`)
        : problem(
          413,
          "invalid_request_error",
          "request_too_large",
          `The ${e.param} exceeds ${e.limitBytes} bytes, the most the gateway accepts.`,
          e.param
        ),
    RequestTimeout: (e) =>
      problem(
        408,
        "invalid_request_error",
        "request_timeout",
        `The request body did not arrive within ${e.seconds} s.`
      ),
    RouteNotFound: (e) => problem(404, "invalid_request_error", "not_found", `No route for ${e.method} ${e.path}.`),
    UpstreamFailed: upstreamProblem,
    NotFound: (e) =>
      e.what === "task"
        ? problem(404, "platform_api_error", "task_not_exist", "task_origin_not_exist", e.param ?? "")
        : e.what === "file"
        // OpenAI's answer for an unknown file: 404 "No such File object: <id>"; `param` names the path parameter.
        ? problem(404, "invalid_request_error", "not_found", `No such File object: ${e.id}`, e.param ?? "id")
        : e.what === "asset" || e.what === "image" || e.what === "batch"
        ? problem(404, "invalid_request_error", "not_found", `No ${e.what} with id "${e.id}".`, e.param ?? "")
        : problem(400, "invalid_request_error", "invalid_request", `No ${e.what} with id "${e.id}".`, e.param ?? ""),
    LedgerUnavailable: () =>
      problem(
        503,
        "platform_api_error",
        "quota_ledger_unavailable",
        "The gateway cannot reach its database to account for quota; try again shortly."
      ),
    StorageUnavailable: () =>
      problem(
        503,
        "platform_api_error",
        "storage_unavailable",
        "The gateway cannot reach its database; try again shortly."
      ),
    Unauthenticated: (e) =>
      problem(
        401,
        "invalid_request_error",
        "unauthenticated",
        e.reason === "expired" ? "The session has expired; log in again." : "Log in first: no session was sent."
      ),
    Forbidden: (e) => problem(403, "invalid_request_error", "forbidden", e.message)
  })

/**
 * The problem for a defect (a bug; a storage failure is `StorageUnavailable`): a 500 that says
 * nothing of the cause.
 *
 * @category errors
 */
export const internalProblem: Problem = problem(500, "platform_api_error", "internal_error", "Internal server error.")

/**
 * The HTTP status of a failure in the api envelope (spec "Account-route error
 * object", rule 4): 200 for a request the caller must change (bad input,
 * unknown object), so a browser client reads `success: false`; the status of
 * the error table for the ones a client must tell apart: 401 (log in), 403
 * (not allowed), 408 (the body came too slowly), 429 (throttled), and 5xx (the
 * gateway's fault).
 *
 * @category errors
 */
export const apiStatus = (p: Problem): number =>
  p.status === 401 || p.status === 403 || p.status === 408 || p.status === 429 || p.status >= 500 ? p.status : 200

/** The envelopes of docs/ARCHITECTURE.md ("Errors"). @category models */
export type EnvelopeKind = "gateway" | "flat" | "api"

/**
 * Renders a problem in one of the generic envelopes.
 *
 * @category errors
 */
export const envelopeBody = (kind: EnvelopeKind, p: Problem): unknown => {
  switch (kind) {
    case "gateway":
      return { error: { message: p.message, type: p.type, param: p.param, code: p.code } }
    case "flat":
      return { code: p.code, message: p.message }
    case "api":
      return { success: false, message: p.message }
  }
}
