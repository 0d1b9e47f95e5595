/**
 * How an upstream call is authenticated when a header the adapter can write by itself is not enough: a cloud vendor
 * whose calls are signed over the whole request (AWS Signature Version 4) or carry a short-lived token the gateway
 * obtains for the key (Google's OAuth 2.0 access token). An adapter's `UpstreamTarget` names one of these;
 * `UpstreamClient` applies it last, after every header of the call is set, so what is signed is what is sent.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { UpstreamFailed } from "../../errors/GatewayError.ts"

/**
 * AWS credentials of one channel key: `<access key id>|<secret access key>` or with `|<session token>` (issue 39's key
 * format for `bedrock` channels).
 *
 * @category models
 */
export interface AwsCredentials {
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly sessionToken?: string | undefined
}

/**
 * A call signed with AWS Signature Version 4 (docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html)
 * for `service` in `region`.
 *
 * @category models
 */
export interface SigV4Signing {
  readonly _tag: "SigV4"
  readonly region: string
  readonly service: string
  readonly credentials: AwsCredentials
}

/**
 * A call carrying a Google OAuth 2.0 access token (`Authorization: Bearer`) obtained for a service-account key by the
 * JWT bearer grant (`GoogleToken.ts`); `serviceAccount` is the key's JSON text as the channel holds it.
 *
 * @category models
 */
export interface GoogleOAuthSigning {
  readonly _tag: "GoogleOAuth"
  readonly serviceAccount: string
}

/**
 * How a call is signed. More kinds join the union as vendors need them (each handled in `CallSigner.ts`).
 *
 * @category models
 */
export type CallSigning = SigV4Signing | GoogleOAuthSigning

/**
 * The request a signer sees: exactly what will be sent.
 *
 * @category models
 */
export interface SignableCall {
  readonly method: "GET" | "POST"
  readonly url: string
  readonly headers: Record<string, string>
  readonly body: string | Uint8Array | undefined
}

/**
 * A channel key as AWS credentials: `id|secret` or `id|secret|session token`; `undefined` for any other shape (a key
 * with no `|` is a Bedrock API key, sent as a Bearer token by the adapter).
 *
 * @category signing
 */
export const awsCredentialsOf = (key: string): AwsCredentials | undefined => {
  const parts = key.split("|")
  if (parts.length !== 2 && parts.length !== 3) return undefined
  const [accessKeyId, secretAccessKey, sessionToken] = parts as [string, string, string | undefined]
  if (accessKeyId === "" || secretAccessKey === "" || sessionToken === "") return undefined
  return { accessKeyId, secretAccessKey, sessionToken }
}

/**
 * A signing failure as the relay classifies it: the key cannot authenticate the call (`unauthorized`, so the key is
 * treated as refused), with a message that names no secret.
 *
 * @category signing
 */
export const signingFailed = (message: string): UpstreamFailed =>
  new UpstreamFailed({ kind: "unauthorized", status: 0, message })

/**
 * The headers of `call` signed with SigV4 (`authorization`, `x-amz-date`, `x-amz-content-sha256`,
 * `x-amz-security-token` with a session token), by `@smithy/signature-v4` (AWS's own signer, loaded on first use),
 * dated `signingDate` (default now; tests pass AWS's published examples' dates). Fails with `UpstreamFailed`
 * (`unauthorized`) when the signer throws.
 *
 * @category signing
 */
export const signSigV4 = (
  signing: SigV4Signing,
  call: SignableCall,
  signingDate?: Date
): Effect.Effect<Record<string, string>, UpstreamFailed> =>
  Effect.tryPromise({
    try: async () => {
      const [{ SignatureV4 }, { Sha256 }] = await Promise.all([
        import("@smithy/signature-v4"),
        import("@aws-crypto/sha256-js")
      ])
      const url = new URL(call.url)
      const query: Record<string, string | Array<string>> = {}
      for (const [name, value] of url.searchParams) {
        const seen = query[name]
        query[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
      }
      const signer = new SignatureV4({
        service: signing.service,
        region: signing.region,
        credentials: signing.credentials,
        sha256: Sha256,
        uriEscapePath: true,
        applyChecksum: true
      })
      const signed = await signer.sign({
        method: call.method,
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port === "" ? {} : { port: Number(url.port) }),
        // Already escaped once (a model id's `:` is `%3A`); the signer escapes each segment again, as SigV4 asks
        // of every service but S3.
        path: url.pathname,
        query,
        headers: { ...call.headers, host: url.host },
        body: call.body
      }, signingDate === undefined ? {} : { signingDate })
      return signed.headers as Record<string, string>
    },
    catch: () => signingFailed("The channel's AWS credentials could not sign the call.")
  })
