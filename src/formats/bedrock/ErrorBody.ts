/**
 * Bedrock Runtime's errors, for every Bedrock wire (Converse, InvokeModel, their streams). An HTTP error answer is
 * AWS's REST-JSON error: the type in the `x-amzn-ErrorType` header (`ValidationException:http://…`) or in the
 * body's `__type` (`com.amazon.coral.service#UnrecognizedClientException`), the text in `message` (or `Message`)
 * (docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html; the errors listed under "Errors" of
 * API_runtime_Converse.html, API_runtime_ConverseStream.html, API_runtime_InvokeModel.html; SDK
 * `@aws-sdk/client-bedrock-runtime` `models/errors.d.ts`). A stream's exception frame names its type in
 * `:exception-type` (`throttlingException`, `modelStreamErrorException`, …; SDK `ConverseStreamOutput`,
 * `ResponseStream`). The type decides the failure kind, never the message.
 *
 * @since 0.1.0
 */
import { safeVendorText } from "../../domain/Redact.ts"
import { UpstreamFailed, type UpstreamFailureKind } from "../../errors/GatewayError.ts"

/**
 * The failure kind of each Bedrock error type (the exception's name with its first letter in upper case, as the
 * HTTP header writes it; a stream's exception type is looked up the same way):
 * - `ValidationException` (400), `ResourceNotFoundException` (404, the model id or profile is unknown to the
 *   account), `ConflictException` → `rejected`;
 * - `AccessDeniedException` (403, the credentials may not call the model), `UnrecognizedClientException` (403, the
 *   access key or API key is not valid), and AWS's common `InvalidSignatureException`, `IncompleteSignatureException`,
 *   `ExpiredTokenException`, `MissingAuthenticationTokenException`, `InvalidClientTokenId`, `SignatureDoesNotMatch`
 *   → `unauthorized` (the key is refused);
 * - `ThrottlingException` (429) and `ServiceQuotaExceededException` (400: "Your request exceeds the service quota for
 *   your account … You can resubmit your request later", API reference) → `throttled`: Bedrock bills the AWS account
 *   afterwards, so no key runs out of credit (no failure here is `quota`, which would disable the key);
 * - `ModelTimeoutException` (408) → `timeout`;
 * - `ModelNotReadyException` (429, the model is being loaded; the SDK retries it), `ModelErrorException` (424, the
 *   model failed), `ModelStreamErrorException`, `InternalServerException` (500), `ServiceUnavailableException` (503)
 *   → `server`.
 *
 * @category decoding
 */
export const BEDROCK_ERROR_KINDS: Readonly<Record<string, UpstreamFailureKind>> = {
  ValidationException: "rejected",
  ResourceNotFoundException: "rejected",
  ConflictException: "rejected",
  AccessDeniedException: "unauthorized",
  UnrecognizedClientException: "unauthorized",
  InvalidSignatureException: "unauthorized",
  IncompleteSignatureException: "unauthorized",
  ExpiredTokenException: "unauthorized",
  MissingAuthenticationTokenException: "unauthorized",
  InvalidClientTokenId: "unauthorized",
  SignatureDoesNotMatch: "unauthorized",
  ServiceQuotaExceededException: "throttled",
  ThrottlingException: "throttled",
  ModelTimeoutException: "timeout",
  ModelNotReadyException: "server",
  ModelErrorException: "server",
  ModelStreamErrorException: "server",
  InternalServerException: "server",
  ServiceUnavailableException: "server"
}

/**
 * The bare error type of a header or `__type` value: what follows a `#` namespace and precedes a `:` suffix,
 * first letter upper-cased (a stream's `throttlingException` is `ThrottlingException`); `undefined` for an empty
 * or absent value.
 *
 * @category decoding
 */
export const bareErrorType = (value: string | undefined): string | undefined => {
  if (value === undefined) return undefined
  const afterHash = value.slice(value.lastIndexOf("#") + 1)
  const colon = afterHash.indexOf(":")
  const type = (colon < 0 ? afterHash : afterHash.slice(0, colon)).trim()
  return type === "" ? undefined : type.charAt(0).toUpperCase() + type.slice(1)
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * The readable parts of a Bedrock error body: `__type` and `message` (or `Message`); empty when the value is not
 * such an object.
 *
 * @category decoding
 */
export const readBedrockErrorBody = (
  body: unknown
): { readonly type?: string | undefined; readonly message?: string | undefined } => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return {}
  const record = body as Record<string, unknown>
  const message = typeof record.message === "string"
    ? record.message
    : typeof record.Message === "string"
    ? record.Message
    : undefined
  return { type: typeof record.__type === "string" ? bareErrorType(record.__type) : undefined, message }
}

const kindOfStatus = (status: number): UpstreamFailureKind =>
  status === 401 || status === 403
    ? "unauthorized"
    : status === 429
    ? "throttled"
    : status === 408
    ? "timeout"
    : status >= 500
    ? "server"
    : "rejected"

/**
 * Classifies a Bedrock HTTP error answer: by its error type (the `x-amzn-ErrorType` header `errorType`, else the
 * body's `__type`; see `BEDROCK_ERROR_KINDS`), and for a type not listed or none, by the status (401/403 →
 * unauthorized, 429 → throttled, 408 → timeout, 5xx → server, else rejected). The message is the vendor's own
 * through `safeVendorText`, or names the status.
 *
 * @category decoding
 */
export const classifyBedrockError = (
  status: number,
  bodyText: string,
  errorType?: string | undefined
): { readonly kind: UpstreamFailureKind; readonly message: string } => {
  const body = readBedrockErrorBody(parseJson(bodyText))
  const type = bareErrorType(errorType) ?? body.type
  const message = body.message === undefined ? `Upstream answered HTTP ${status}` : safeVendorText(body.message)
  const kind = (type === undefined ? undefined : BEDROCK_ERROR_KINDS[type]) ?? kindOfStatus(status)
  return { kind, message }
}

/**
 * The names of a stream's exception events (SDK `ConverseStreamOutput` and `ResponseStream` members that are
 * exceptions), as the event-stream reader hands them out in `event`.
 *
 * @category decoding
 */
export const STREAM_EXCEPTIONS: ReadonlySet<string> = new Set([
  "internalServerException",
  "modelStreamErrorException",
  "validationException",
  "throttlingException",
  "serviceUnavailableException",
  "modelTimeoutException"
])

/**
 * A stream exception frame (`event` its `:exception-type`, `data` its JSON payload `{message}`), or an AWS error
 * frame (`:message-type: error`, read with its `:error-code` as the event), as the failure it means: its kind by
 * type (`BEDROCK_ERROR_KINDS`; `server` for a type not listed), status 200 (the stream had started).
 *
 * @category decoding
 */
export const streamExceptionFailure = (type: string, data: string): UpstreamFailed => {
  const body = readBedrockErrorBody(parseJson(data))
  const bare = bareErrorType(type)
  const kind = (bare === undefined ? undefined : BEDROCK_ERROR_KINDS[bare]) ?? "server"
  const message = body.message === undefined
    ? `The upstream stream failed (${safeVendorText(type, 100)}).`
    : safeVendorText(body.message)
  return new UpstreamFailed({ kind, status: 200, message })
}
