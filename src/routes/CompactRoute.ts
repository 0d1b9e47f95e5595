/**
 * `POST /v1/responses/compact` (spec "Text: responses format"): compresses a
 * long context into the user messages plus one `compaction` item (SDK
 * `client.responses.compact`, `ResponseCompactParams` → `CompactedResponse`,
 * `openai@7.57.0`). Only `openai` channels whose settings say
 * `responses_compact: true` serve it; when the model has none, a 400 says so.
 * The caller's body is forwarded as is (model mapped) through the shared relay,
 * with failover, and billed from the upstream's `usage` like any text request.
 * A `previous_response_id` is expanded from the gateway's stored conversation
 * (the upstream never saw the gateway's ids), as on `POST /v1/responses`.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Predicate, Result, Schema } from "effect"
import { HttpRouter, type HttpServerRequest } from "effect/http"
import { parseDataUri } from "../canonical/DataUri.ts"
import { promptTokensTypical } from "../canonical/Estimate.ts"
import type { Part } from "../canonical/Content.ts"
import type { Request } from "../canonical/Request.ts"
import { InvalidRequest } from "../errors/GatewayError.ts"
import type { ResponseMeta } from "../formats/Format.ts"
import { OpenAiResponsesFormat } from "../formats/openai/responses/Format.ts"
import { encodeResponsesRequest } from "../formats/openai/responses/RequestEncoder.ts"
import { usageFromWire } from "../formats/openai/responses/WireSchema.ts"
import { makeWireDecoder } from "../formats/shared/WireDecode.ts"
import { readJsonObject } from "../http/Body.ts"
import { credentialOf } from "../http/Credentials.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { respondWith } from "../http/Respond.ts"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { recordOf } from "../observability/RequestRecord.ts"
import { Relay, type SideEndpoint } from "../relay/text/Relay.ts"
import { ResponseStore } from "../services/ResponseStore.ts"

/** The public path. @category routes */
export const COMPACT_PATH = "/v1/responses/compact"

/**
 * The fields the gateway reads (`ResponseCompactParams`); everything else is
 * forwarded untouched. `input` is a string or a list of item objects, as the
 * SDK sends it.
 */
const Body = Schema.Struct({
  model: Schema.String,
  input: Schema.optional(
    Schema.NullOr(Schema.Union([Schema.String, Schema.Array(Schema.Record(Schema.String, Schema.Unknown))]))
  ),
  instructions: Schema.optional(Schema.NullOr(Schema.String)),
  previous_response_id: Schema.optional(Schema.NullOr(Schema.String))
})

const decodeBody = makeWireDecoder(Body)

/**
 * The compact endpoint as the relay sees it: `{responses URL}/compact` on
 * `openai` channels with `settings.responses_compact`, billed from the
 * answer's `usage` (`ResponseUsage`).
 *
 * @category routes
 */
export const compactEndpoint: SideEndpoint = {
  pathSuffix: "/compact",
  supports: (channel) => channel.type === "openai" && channel.settings.responses_compact === true,
  unsupported: (model) =>
    new InvalidRequest({
      message: `Model "${model}" has no channel that supports ${COMPACT_PATH}.`,
      param: "model"
    }),
  usageOf: (json) => usageFromWire(Predicate.isObject(json) ? json.usage : undefined)
}

/**
 * Canonical parts for the quota hold only: every string of the input as text,
 * except Base64 data URIs, held like the other routes hold media (an image a
 * fixed allowance, a file by its size). Keys and item shapes are not read, so
 * items the canonical form cannot express still count. Recursive: as deep as the body, which `readJsonObject`
 * bounds at `MAX_JSON_DEPTH` levels.
 */
const estimateParts = (value: unknown, parts: Array<Part>): void => {
  if (typeof value === "string") {
    const media = parseDataUri(value)
    if (media === undefined) parts.push({ type: "text", text: value })
    else {
      const source = { kind: "base64", ...media } as const
      parts.push(media.mediaType.startsWith("image/") ? { type: "image", source } : { type: "file", source })
    }
  } else if (Array.isArray(value)) {
    for (const item of value) estimateParts(item, parts)
  } else if (Predicate.isObject(value)) {
    for (const item of Object.values(value)) estimateParts(item, parts)
  }
}

/** @category routes */
export const CompactRoute = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const auth = yield* Auth
  const relay = yield* Relay
  const settings = yield* GatewaySettings
  const responses = yield* ResponseStore

  const handler = (httpRequest: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function* () {
      const principal = yield* auth.authenticate(credentialOf("bearer", httpRequest), clientAddressOf(httpRequest))
      const raw = yield* readJsonObject(httpRequest, settings.maxBodyBytes)
      const decoded = decodeBody(raw)
      if (Result.isFailure(decoded)) return yield* decoded.failure
      const body = decoded.success
      if (raw.stream !== undefined && raw.stream !== null && raw.stream !== false) {
        return yield* new InvalidRequest({ message: `${COMPACT_PATH} does not stream.`, param: "stream" })
      }
      const forwarded: Record<string, unknown> = { ...raw }
      if (typeof body.previous_response_id === "string") {
        const history = yield* responses.load(body.previous_response_id, principal.tokenId)
        const earlier = encodeResponsesRequest({ model: body.model, messages: history, stream: false }).body.input
        const current = typeof body.input === "string" ? [{ role: "user", content: body.input }] : body.input ?? []
        forwarded.input = [...(Array.isArray(earlier) ? earlier : []), ...current]
        delete forwarded.previous_response_id
      }
      const parts: Array<Part> = []
      estimateParts(forwarded.input, parts)
      const request: Request = {
        model: body.model,
        messages: [
          ...(typeof body.instructions === "string"
            ? [{ role: "system" as const, content: [{ type: "text" as const, text: body.instructions }] }]
            : []),
          { role: "user", content: parts }
        ],
        stream: false
      }
      const requestId = crypto.randomUUID().replaceAll("-", "")
      const meta: ResponseMeta = {
        id: "resp_" + requestId,
        model: body.model,
        created: Math.floor((yield* Clock.currentTimeMillis) / 1000),
        promptTokensEstimate: promptTokensTypical(request)
      }
      return yield* relay.run({
        inbound: "openai-responses",
        raw: forwarded,
        request,
        principal,
        requestId,
        record: recordOf(httpRequest),
        meta,
        endpoint: compactEndpoint
      })
    }).pipe(respondWith(OpenAiResponsesFormat.encodeError))

  yield* router.add("POST", COMPACT_PATH, handler)
}))
