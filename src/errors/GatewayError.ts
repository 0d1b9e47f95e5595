/**
 * The closed union of everything a request can fail with. Every route maps it
 * through one exhaustive table (`Envelope.ts`); adding a member without a row
 * there does not compile.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * The caller's request is malformed or asks for something the gateway cannot
 * do. `param` names the offending field (`messages[0].content`), or is empty.
 *
 * @category errors
 */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  message: Schema.String,
  param: Schema.optional(Schema.String),
  /** Overrides the spec code `invalid_request` (e.g. `invalid_request_error`). */
  code: Schema.optional(Schema.String)
}) {}

/**
 * No usable key: `missing` (none sent), `unknown`, `disabled`, `expired`,
 * `address` (used from an address outside the key's IP allow-list).
 *
 * @category errors
 */
export class InvalidApiKey extends Schema.TaggedError<InvalidApiKey>()("InvalidApiKey", {
  reason: Schema.Literals(["missing", "unknown", "disabled", "expired", "address"])
}) {}

/**
 * The token's or the user's remaining quota cannot cover the request's
 * estimate. Amounts in quota units (micro-USD).
 *
 * @category errors
 */
export class InsufficientQuota extends Schema.TaggedError<InsufficientQuota>()("InsufficientQuota", {
  required: Schema.BigInt,
  remaining: Schema.BigInt,
  scope: Schema.Literals(["token", "user"])
}) {}

/**
 * A budget that applies to the request (the key's or its user's, for one
 * period) cannot cover its hold: 429 `budget_exceeded`. `message` names the
 * budget and when it resets; `retryAfterSeconds` (the wait until that reset)
 * feeds `Retry-After`, absent for a `total` budget, which never resets.
 *
 * @category errors
 */
export class BudgetExceeded extends Schema.TaggedError<BudgetExceeded>()("BudgetExceeded", {
  message: Schema.String,
  retryAfterSeconds: Schema.optional(Schema.Number)
}) {}

/**
 * The model is not available to the caller's group or token (spec: 503
 * `model_not_found`). `status` is the HTTP status it answers with, the
 * gateway's `unknown_model_status` setting: 503 (the spec's, the default) or
 * 404 (OpenAI's own).
 *
 * @category errors
 */
export class ModelNotFound extends Schema.TaggedError<ModelNotFound>()("ModelNotFound", {
  model: Schema.String,
  status: Schema.optional(Schema.Literals([503, 404]))
}) {}

/**
 * The model is known but has no price and is not marked free, so it cannot be
 * billed.
 *
 * @category errors
 */
export class ModelNotPriced extends Schema.TaggedError<ModelNotPriced>()("ModelNotPriced", {
  model: Schema.String
}) {}

/**
 * The caller exceeded one of its own limits (requests or tokens per minute,
 * concurrency). `retryAfterSeconds` feeds the `Retry-After` header.
 *
 * @category errors
 */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  message: Schema.String,
  retryAfterSeconds: Schema.Number
}) {}

/**
 * The request body is larger than the configured limit (bytes). `param` names the field that ran over (`file` for
 * an upload past the per-file limit), or is absent for the body as a whole.
 *
 * @category errors
 */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  limitBytes: Schema.Number,
  param: Schema.optional(Schema.String)
}) {}

/**
 * The request body did not arrive within the body deadline
 * (`SLUICE_BODY_TIMEOUT_SECONDS`): 408 `request_timeout`. `seconds` is the
 * deadline.
 *
 * @category errors
 */
export class RequestTimeout extends Schema.TaggedError<RequestTimeout>()("RequestTimeout", {
  seconds: Schema.Number
}) {}

/**
 * No route matches the method and path.
 *
 * @category errors
 */
export class RouteNotFound extends Schema.TaggedError<RouteNotFound>()("RouteNotFound", {
  method: Schema.String,
  path: Schema.String
}) {}

/**
 * Why an upstream call failed:
 * - `rejected`: the upstream refused the request itself (4xx other than 401/403/429);
 * - `unauthorized`: the upstream refused our key (401/403);
 * - `quota`: the vendor account is out of credit;
 * - `throttled`: 429;
 * - `server`: 5xx;
 * - `bad-body`: an answer that cannot be read;
 * - `timeout`: no answer (or no next event) in time;
 * - `network`: connection refused or reset, DNS failure;
 * - `stream-broken`: the stream ended or failed before its end marker;
 * - `copy-failed`: an accepted (2xx) answer whose body broke off while it was
 *   read, on a call that may already have made something upstream (a video
 *   submit: spec "Errors", 500 `bad_response`, "response copy failed on video
 *   submit"); not tried on another channel, since the vendor may hold the task.
 *
 * @category models
 */
export const UpstreamFailureKind = Schema.Literals([
  "rejected",
  "unauthorized",
  "quota",
  "throttled",
  "server",
  "bad-body",
  "timeout",
  "network",
  "stream-broken",
  "copy-failed"
])

/** @category models */
export type UpstreamFailureKind = typeof UpstreamFailureKind.Type

/**
 * Why a vendor refused a request for its content, where its error says so in a structured code (never read from
 * its message): `content_filter`, Azure OpenAI's content filter (HTTP 400, `error.code: "content_filter"`,
 * learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter). The caller sees it as its error's `code`.
 *
 * @category models
 */
export const UpstreamRefusalCode = Schema.Literals(["content_filter"])

/** @category models */
export type UpstreamRefusalCode = typeof UpstreamRefusalCode.Type

/**
 * An upstream call failed. `status` is the upstream's HTTP status (0 when
 * there was none); `message` is safe to show the caller (it never holds the
 * upstream key or URL credentials); `code`, on a `rejected` failure, names a
 * content refusal (`UpstreamRefusalCode`).
 *
 * @category errors
 */
export class UpstreamFailed extends Schema.TaggedError<UpstreamFailed>()("UpstreamFailed", {
  kind: UpstreamFailureKind,
  status: Schema.Number,
  message: Schema.String,
  channelId: Schema.optional(Schema.Number),
  code: Schema.optional(UpstreamRefusalCode)
}) {
  /** Whether another candidate may be tried (issue: failover rules). */
  get retryable(): boolean {
    return this.kind !== "rejected" && this.kind !== "copy-failed"
  }
}

/**
 * A stored object the caller referred to does not exist for its key (a
 * previous response id, a task id, an asset id) or, on `/api/*`, is not the caller's to see
 * (a user, a token, a channel): the answer is the same either way.
 *
 * @category errors
 */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  what: Schema.Literals([
    "response",
    "task",
    "user",
    "token",
    "channel",
    "asset",
    "image",
    "webhook",
    "batch",
    "file",
    "request"
  ]),
  id: Schema.String,
  param: Schema.optional(Schema.String)
}) {}

/**
 * The quota ledger has not reached its database for longer than its lease
 * stale time, so the balance it leased may since have been leased by another
 * instance: it serves no hold until it reaches the database again (503,
 * `quota_ledger_unavailable`).
 *
 * @category errors
 */
export class LedgerUnavailable extends Schema.TaggedError<LedgerUnavailable>()("LedgerUnavailable", {}) {}

/**
 * A statement the request needed could not run on the gateway's database (the
 * connection was refused or lost, the pool timed out, the server failed it):
 * 503 `storage_unavailable` with `Retry-After`. `operation` names what could
 * not be done in a few fixed words (`auth.lookup`, `tasks.find`); it never
 * holds SQL text, parameters or the driver's message, so it is safe to log and
 * to use as a metric label.
 *
 * @category errors
 */
export class StorageUnavailable extends Schema.TaggedError<StorageUnavailable>()("StorageUnavailable", {
  operation: Schema.String
}) {}

/**
 * An `/api/*` route needs a browser session and none came with the request,
 * or it expired or was revoked (401 in the api envelope).
 *
 * @category errors
 */
export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()("Unauthenticated", {
  reason: Schema.Literals(["no-session", "expired"])
}) {}

/**
 * The caller is known but may not do this: its role is too low, the target
 * user's role is not below its own, or a cookie-authenticated change came
 * without the CSRF defence (403 in the api envelope). `message` says which.
 *
 * @category errors
 */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: Schema.String
}) {}

/**
 * The whole union.
 *
 * @category models
 */
export type GatewayError =
  | InvalidRequest
  | InvalidApiKey
  | InsufficientQuota
  | BudgetExceeded
  | ModelNotFound
  | ModelNotPriced
  | RateLimited
  | PayloadTooLarge
  | RequestTimeout
  | RouteNotFound
  | UpstreamFailed
  | NotFound
  | LedgerUnavailable
  | StorageUnavailable
  | Unauthenticated
  | Forbidden
