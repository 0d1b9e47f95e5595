/**
 * How the emulator's Bedrock Runtime authenticates a request, as Bedrock does: AWS Signature Version 4
 * (docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html) for the service `bedrock`, or
 * a Bedrock API key as `Authorization: Bearer <key>` (docs.aws.amazon.com/bedrock/latest/userguide/api-keys-use.html).
 *
 * A signed request is checked by signing it again: the signature is recomputed with `@smithy/signature-v4` (AWS's own
 * signer, loaded on first use) from the received method, path (as sent, so a model id's `%3A` is escaped once more,
 * as the client's signer did), query, the headers its `SignedHeaders` names, the date of `x-amz-date` and the secret
 * the emulator knows for the credential's access key id, and compared with the one sent. The host is signed as
 * `host`, or over HTTP/2 as the `:authority` pseudo-header (what `@aws-sdk/client-bedrock-runtime` signs: its
 * default handler is `NodeHttp2Handler`, which speaks HTTP/2 even to a plain-http endpoint), whose value is the
 * request's authority. A session token
 * (`x-amz-security-token`) is taken with any known access key. Also checked: the credential scope names `bedrock` and
 * `aws4_request`, `x-amz-content-sha256` (when sent) is the SHA-256 of the body, and the request reached the server
 * within five minutes of its `x-amz-date` ("In most cases, a request must reach AWS within five minutes of the time
 * stamp in the request", IAM user guide, "Elements of an AWS API request signature").
 *
 * Refusals are AWS's 403s: an unknown access key or API key `UnrecognizedClientException` ("The security token
 * included in the request is invalid."), a wrong signature or stale date `InvalidSignatureException`, no credentials
 * `MissingAuthenticationTokenException` ("Missing Authentication Token").
 *
 * @since 0.1.0
 */
import type { BedrockException } from "./BedrockWire.ts"

/** The access key id of the emulator's test account (AWS's documented example key id). @category credentials */
export const BEDROCK_TEST_ACCESS_KEY_ID = "AKIDEXAMPLE"

/** The secret access key of the emulator's test account (AWS's documented example secret). @category credentials */
export const BEDROCK_TEST_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"

/** The emulator's test Bedrock API key, sent as `Authorization: Bearer …`. @category credentials */
export const BEDROCK_TEST_API_KEY = "ABSK-sk-test-bedrock-api-key"

/** The test account as a gateway channel key: `<access key id>|<secret access key>` (issue 39's format). @category credentials */
export const BEDROCK_TEST_CHANNEL_KEY = `${BEDROCK_TEST_ACCESS_KEY_ID}|${BEDROCK_TEST_SECRET_ACCESS_KEY}`

/** The most a request's `x-amz-date` may differ from the server's clock, in milliseconds (five minutes). */
const MAX_SKEW_MS = 5 * 60 * 1000

/** The accounts and API keys the emulator's Bedrock takes. @category models */
export interface BedrockAccounts {
  /** Access key id → secret access key. */
  readonly secrets: Readonly<Record<string, string>>
  readonly apiKeys: ReadonlySet<string>
}

/** A request as the verifier sees it: what was received, the body as its bytes. @category models */
export interface ReceivedRequest {
  readonly method: string
  /** The URL as received (its path still percent-encoded). */
  readonly url: URL
  readonly headers: Headers
  readonly body: Uint8Array
}

/** The outcome of checking a request's credentials. @category models */
export type BedrockAuthResult =
  | {
    readonly ok: true
    /** The access key id (SigV4) or the API key (Bearer) the request authenticated with. */
    readonly key: string
    /** The region of the credential scope (SigV4), `undefined` for an API key. */
    readonly region: string | undefined
  }
  | { readonly ok: false; readonly exception: BedrockException; readonly message: string }

/** A parsed SigV4 `Authorization` header. */
interface SigV4Header {
  readonly accessKeyId: string
  readonly date: string
  readonly region: string
  readonly service: string
  readonly terminator: string
  readonly signedHeaders: ReadonlyArray<string>
  readonly signature: string
}

const AUTH_PATTERN =
  /^AWS4-HMAC-SHA256 Credential=([^/,\s]{1,128})\/(\d{8})\/([a-z0-9-]{1,32})\/([a-z0-9-]{1,64})\/([a-z0-9_]{1,32}),\s*SignedHeaders=([a-z0-9;:._-]{1,2048}),\s*Signature=([0-9a-f]{64})$/

const parseSigV4 = (header: string): SigV4Header | undefined => {
  const found = AUTH_PATTERN.exec(header.slice(0, 4096))
  if (found === null) return undefined
  return {
    accessKeyId: found[1],
    date: found[2],
    region: found[3],
    service: found[4],
    terminator: found[5],
    signedHeaders: found[6].split(";"),
    signature: found[7]
  }
}

/**
 * The key a Bedrock request names before it is checked: the access key id of its SigV4 credential, or its Bearer
 * token; `undefined` when it carries neither.
 *
 * @category credentials
 */
export const bedrockRequestKey = (headers: Headers): string | undefined => {
  const authorization = headers.get("authorization") ?? ""
  if (authorization.startsWith("AWS4-HMAC-SHA256 ")) return parseSigV4(authorization)?.accessKeyId
  const bearer = /^Bearer\s+(\S{1,4096})$/i.exec(authorization)
  return bearer === null ? undefined : bearer[1]
}

/** `20150830T123600Z` as a date, or `undefined`. */
const parseAmzDate = (value: string): Date | undefined => {
  const found = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value)
  if (found === null) return undefined
  const [, year, month, day, hour, minute, second] = found.map(Number)
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second))
  return Number.isNaN(date.getTime()) ? undefined : date
}

/** Epoch milliseconds as `20150830T123600Z`. */
const amzDateOf = (epochMs: number): string => new Date(epochMs).toISOString().replace(/[-:]|\.\d{3}/g, "")

const hex = (bytes: ArrayBuffer): string =>
  Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("")

/** Compares two strings in time independent of where they differ. */
const sameText = (left: string, right: string): boolean => {
  if (left.length !== right.length) return false
  let difference = 0
  for (let index = 0; index < left.length; index++) difference |= left.charCodeAt(index) ^ right.charCodeAt(index)
  return difference === 0
}

const refuse = (exception: BedrockException, message: string): BedrockAuthResult => ({ ok: false, exception, message })

const UNRECOGNIZED = "The security token included in the request is invalid."
const SIGNATURE_MISMATCH = "The request signature we calculated does not match the signature you provided. Check " +
  "your AWS Secret Access Key and signing method. Consult the service documentation for details."

/**
 * Checks a request's credentials against `accounts` at `now` for `service` (default `bedrock`; tests check the
 * verifier against AWS's published signing examples, signed for the service `service`). See the module doc for the
 * rules and refusals.
 *
 * @category credentials
 */
export const verifyBedrockRequest = async (
  request: ReceivedRequest,
  accounts: BedrockAccounts,
  now: Date = new Date(),
  service = "bedrock"
): Promise<BedrockAuthResult> => {
  const authorization = request.headers.get("authorization")
  if (authorization === null || authorization.length === 0) {
    return refuse("MissingAuthenticationTokenException", "Missing Authentication Token")
  }
  if (!authorization.startsWith("AWS4-HMAC-SHA256 ")) {
    const key = bedrockRequestKey(request.headers)
    if (key === undefined) {
      return refuse("MissingAuthenticationTokenException", "Authorization header requires 'Credential' parameter.")
    }
    return accounts.apiKeys.has(key)
      ? { ok: true, key, region: undefined }
      : refuse("UnrecognizedClientException", UNRECOGNIZED)
  }
  const header = parseSigV4(authorization)
  if (header === undefined) {
    return refuse(
      "InvalidSignatureException",
      "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters."
    )
  }
  const secret = Object.hasOwn(accounts.secrets, header.accessKeyId) ? accounts.secrets[header.accessKeyId] : undefined
  if (secret === undefined) return refuse("UnrecognizedClientException", UNRECOGNIZED)
  if (header.service !== service || header.terminator !== "aws4_request") {
    return refuse(
      "InvalidSignatureException",
      `Credential should be scoped to correct service: '${service}'. Credential scope names '${header.service}'.`
    )
  }
  const amzDate = request.headers.get("x-amz-date") ?? ""
  const signingDate = parseAmzDate(amzDate)
  if (signingDate === undefined || !amzDate.startsWith(header.date)) {
    return refuse(
      "InvalidSignatureException",
      "The request's x-amz-date is missing or does not match its credential scope."
    )
  }
  // AWS's wording (botocore issue 149 quotes it): "Signature expired: <date> is now earlier than <now − 5 min>
  // (<now> - 5 min.)", and for a date ahead of the clock "Signature not yet current: … is still later than …".
  if (now.getTime() - signingDate.getTime() > MAX_SKEW_MS) {
    return refuse(
      "InvalidSignatureException",
      `Signature expired: ${amzDate} is now earlier than ${amzDateOf(now.getTime() - MAX_SKEW_MS)} (${
        amzDateOf(now.getTime())
      } - 5 min.)`
    )
  }
  if (signingDate.getTime() - now.getTime() > MAX_SKEW_MS) {
    return refuse(
      "InvalidSignatureException",
      `Signature not yet current: ${amzDate} is still later than ${amzDateOf(now.getTime() + MAX_SKEW_MS)} (${
        amzDateOf(now.getTime())
      } + 5 min.)`
    )
  }
  const signedValue = (name: string): string | undefined =>
    name === ":authority"
      ? request.url.host
      : name === "host"
      ? request.headers.get("host") ?? request.url.host
      : request.headers.get(name) ?? undefined
  const names = header.signedHeaders
  if (
    !(names.includes("host") || names.includes(":authority")) || names.some((name) => signedValue(name) === undefined)
  ) {
    return refuse("InvalidSignatureException", SIGNATURE_MISMATCH)
  }
  const declaredHash = request.headers.get("x-amz-content-sha256")
  if (declaredHash !== null && declaredHash !== "UNSIGNED-PAYLOAD") {
    const bodyHash = hex(await crypto.subtle.digest("SHA-256", new Uint8Array(request.body)))
    if (declaredHash !== bodyHash) {
      return refuse(
        "InvalidSignatureException",
        "The provided 'x-amz-content-sha256' header does not match what was computed."
      )
    }
  }
  const [{ SignatureV4 }, { Sha256 }] = await Promise.all([
    import("@smithy/signature-v4"),
    import("@aws-crypto/sha256-js")
  ])
  const sessionToken = request.headers.get("x-amz-security-token") ?? undefined
  const signer = new SignatureV4({
    service: header.service,
    region: header.region,
    credentials: { accessKeyId: header.accessKeyId, secretAccessKey: secret, sessionToken },
    sha256: Sha256,
    uriEscapePath: true,
    applyChecksum: false
  })
  const headers: Record<string, string> = {}
  for (const name of names) headers[name] = signedValue(name) ?? ""
  const query: Record<string, string | Array<string>> = {}
  for (const [name, value] of request.url.searchParams) {
    const seen = query[name]
    query[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  }
  const signed = await signer.sign({
    method: request.method,
    protocol: request.url.protocol,
    hostname: request.url.hostname,
    path: request.url.pathname,
    query,
    headers,
    body: request.body
  }, { signingDate, signableHeaders: new Set(header.signedHeaders) })
  const expected = parseSigV4(String(signed.headers.authorization ?? ""))
  if (expected === undefined || !sameText(expected.signature, header.signature)) {
    return refuse("InvalidSignatureException", SIGNATURE_MISMATCH)
  }
  return { ok: true, key: header.accessKeyId, region: header.region }
}
