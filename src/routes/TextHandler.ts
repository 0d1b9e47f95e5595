/**
 * The handler shape every text generation route shares: authenticate, read
 * the body within its size limit, decode it with the route's format, then run
 * the relay; failures leave in the route format's own error shape.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Result } from "effect"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"
import { promptTokensTypical } from "../canonical/Estimate.ts"
import type { OutputPart } from "../canonical/Content.ts"
import type { Request } from "../canonical/Request.ts"
import type { GatewayError } from "../errors/GatewayError.ts"
import type { FormatName, Problem, ResponseMeta } from "../formats/Format.ts"
import { formatOf } from "../formats/Formats.ts"
import { readJsonObject } from "../http/Body.ts"
import { credentialOf, type CredentialStyle, headerOf } from "../http/Credentials.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { innerCallerOf } from "../http/InnerCaller.ts"
import { respondWith } from "../http/Respond.ts"
import { socketScopeOf } from "../http/SocketScope.ts"
import { recordOf, usageRequestId } from "../observability/RequestRecord.ts"
import type { Auth, Principal } from "../services/Auth.ts"
import type { Settings } from "../services/GatewaySettings.ts"
import type { Relay } from "../relay/text/Relay.ts"
import type { SessionCaller } from "./SessionCaller.ts"

/** What varies between text routes. @category models */
export interface TextRouteOptions {
  readonly format: FormatName
  readonly credentials: CredentialStyle
  /** Prefix of the public answer id (`chatcmpl-`, `msg_`, `resp_`, `cmpl-`). */
  readonly idPrefix: string
  /** Generate-content: the model and streaming come from the path. */
  readonly fromPath?: (url: URL) => { readonly model: string; readonly stream: boolean; readonly jsonArray: boolean }
  /** The browser session is accepted when no key is sent (the console playground, `SessionCaller.ts`). */
  readonly session?: true
  /** Caller headers (lower-case names) a same-format channel gets as sent (messages: `anthropic-beta`). */
  readonly forwardHeaders?: ReadonlyArray<string>
  /** A hook between decoding and relaying (Responses: `previous_response_id`, `store`). */
  readonly prepare?: (
    principal: Principal,
    raw: Record<string, unknown>,
    request: Request
  ) => Effect.Effect<Prepared, GatewayError>
}

/** What a `prepare` hook hands on to the relay. @category models */
export interface Prepared {
  readonly request: Request
  /** The body for same-format channels when the hook rebuilt it (else the caller's, as sent). */
  readonly raw?: Record<string, unknown> | undefined
  readonly onAnswer?: ((id: string, content: ReadonlyArray<OutputPart>) => Effect.Effect<void>) | undefined
}

/** The services a text route uses, taken once when routes are built. @category models */
export interface TextRouteServices {
  readonly auth: typeof Auth.Service
  readonly relay: typeof Relay.Service
  readonly settings: Settings
  /** Resolves a browser session to its playground principal (routes with `session: true`). */
  readonly sessionCaller?: SessionCaller | undefined
}

/**
 * Builds the handler of a text route.
 *
 * @category routes
 */
export const textHandler = (services: TextRouteServices, options: TextRouteOptions) => {
  const format = formatOf(options.format)
  const render = format.encodeError
  /** A JSON-array stream's error is an array too (`[{"error": …}]`), as generate-content answers one. */
  const renderInArray = (problem: Problem) => [render(problem)]
  return (httpRequest: HttpServerRequest.HttpServerRequest): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
    const path = options.fromPath?.(new URL(httpRequest.url, "http://localhost"))
    return Effect.gen(function* () {
      // A batch line the gateway sends for a caller names its token by digest (`http/InnerCaller.ts`).
      const inner = innerCallerOf(httpRequest)
      const key = inner === undefined ? credentialOf(options.credentials, httpRequest) : undefined
      const viaSession = inner === undefined && key === undefined && options.session === true
        ? services.sessionCaller?.(httpRequest)
        : undefined
      const principal = inner !== undefined
        ? yield* services.auth.authenticateDigest(inner.keyHash, inner.clientAddress)
        : viaSession !== undefined
        ? yield* viaSession
        : yield* services.auth.authenticate(key, clientAddressOf(httpRequest))
      const raw = yield* readJsonObject(httpRequest, services.settings.maxBodyBytes)
      const decoded = format.decodeRequest(raw, { model: path?.model, stream: path?.stream })
      if (Result.isFailure(decoded)) return yield* decoded.failure
      const prepared: Prepared = options.prepare === undefined
        ? { request: decoded.success }
        : yield* options.prepare(principal, raw, decoded.success)
      const request = prepared.request
      // A request id the gateway made is also the usage log's; a caller's own is never trusted to be unique.
      const record = recordOf(httpRequest)
      const requestId = usageRequestId(record)
      const includeCost = headerOf(httpRequest, "x-sluice-include-cost") === "1" ||
        format.passthrough.wantsStreamCost?.(raw) === true
      const meta: ResponseMeta = {
        id: options.idPrefix + requestId,
        model: request.model,
        created: Math.floor((yield* Clock.currentTimeMillis) / 1000),
        // The cost travels in the usage: a chat caller that asks for it sees the usage chunk.
        includeUsage: includeCost || format.passthrough.wantsStreamUsage(raw),
        promptTokensEstimate: promptTokensTypical(request),
        request: raw,
        obfuscate: request.includeObfuscation !== false
      }
      // Read one header at a time (the request's whole header record is not built on the hot path).
      let forwardHeaders: Record<string, string> | undefined
      for (const name of options.forwardHeaders ?? []) {
        const value = headerOf(httpRequest, name)
        if (value !== undefined && value.length > 0) (forwardHeaders ??= {})[name] = value
      }
      return yield* services.relay.run({
        inbound: options.format,
        raw: prepared.raw ?? raw,
        request,
        principal,
        requestId,
        record,
        meta,
        jsonArrayStream: path?.jsonArray,
        onAnswer: prepared.onAnswer,
        includeCost,
        forwardHeaders,
        socket: socketScopeOf(httpRequest)
      })
    }).pipe(respondWith(path?.jsonArray === true ? renderInArray : render))
  }
}
