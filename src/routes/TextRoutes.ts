/**
 * The text generation routes of the spec ("Endpoints"): chat completions,
 * legacy completions, messages, Responses and generate-content, all over the
 * shared relay.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest } from "effect/http"
import type { OutputPart } from "../canonical/Content.ts"
import type { Request } from "../canonical/Request.ts"
import { InvalidRequest, RouteNotFound } from "../errors/GatewayError.ts"
import { withHistory } from "../formats/openai/responses/Format.ts"
import { formatOf } from "../formats/Formats.ts"
import { respondWith } from "../http/Respond.ts"
import { Auth, type Principal } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { Relay } from "../relay/text/Relay.ts"
import { ResponseStore } from "../services/ResponseStore.ts"
import { Sessions } from "../accounts/Sessions.ts"
import { Tokens } from "../accounts/Tokens.ts"
import { makeSessionCaller } from "./SessionCaller.ts"
import { CountTokens } from "./CountTokensRoute.ts"
import { Embeddings } from "./EmbeddingRoutes.ts"
import { textHandler } from "./TextHandler.ts"

/**
 * `…/models/{model}:{method}` → model, method (empty when there is none),
 * whether it streams, and the JSON-array framing; `undefined` when the last
 * segment holds a percent-escape that does not decode.
 *
 * @category routes
 */
export const generateContentPath = (url: URL) => {
  let last: string
  try {
    last = decodeURIComponent(url.pathname.slice(url.pathname.lastIndexOf("/") + 1))
  } catch {
    return undefined
  }
  const colon = last.lastIndexOf(":")
  const model = colon === -1 ? last : last.slice(0, colon)
  const method = colon === -1 ? "" : last.slice(colon + 1)
  const stream = method === "streamGenerateContent"
  return { model, method, stream, jsonArray: stream && url.searchParams.get("alt") !== "sse" }
}

/** The generation methods of the generate-content API (ai.google.dev/api/generate-content). */
const GENERATION_METHODS: ReadonlySet<string> = new Set(["generateContent", "streamGenerateContent"])

/** @category routes */
export const TextRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const auth = yield* Auth
  const services = {
    auth,
    relay: yield* Relay,
    settings: yield* GatewaySettings,
    sessionCaller: makeSessionCaller(yield* Sessions, yield* Tokens, auth)
  }
  const responses = yield* ResponseStore

  /**
   * Responses: expand `previous_response_id` from the stored conversation (in
   * the canonical request, and in the caller's body for same-format channels,
   * every other field of it kept), and keep the new conversation unless the
   * caller sent `store: false`.
   */
  const prepareResponses = (principal: Principal, raw: Record<string, unknown>, request: Request) =>
    Effect.gen(function* () {
      const previousId = raw.previous_response_id
      if (previousId !== undefined && previousId !== null && typeof previousId !== "string") {
        return yield* new InvalidRequest({
          message: "previous_response_id must be a string.",
          param: "previous_response_id"
        })
      }
      const history = typeof previousId === "string" ? yield* responses.load(previousId, principal.tokenId) : []
      const expanded: Request = history.length === 0 ? request : {
        ...request,
        messages: [
          ...request.messages.filter((message) => message.role === "system"),
          ...history,
          ...request.messages.filter((message) => message.role !== "system")
        ]
      }
      const conversation = expanded.messages.filter((message) => message.role !== "system")
      return {
        request: expanded,
        raw: history.length === 0 ? raw : withHistory(raw, history),
        onAnswer: raw.store === false ? undefined : (id: string, content: ReadonlyArray<OutputPart>) =>
          // Saved inside the settlement, after the bill: a failure there stays the defect it was (billing unchanged).
          responses.save(id, principal.tokenId, [...conversation, { role: "assistant", content }]).pipe(Effect.orDie)
      }
    })
  yield* router.add(
    "POST",
    "/v1/chat/completions",
    textHandler(services, { format: "openai-chat", credentials: "bearer", idPrefix: "chatcmpl-", session: true })
  )
  yield* router.add(
    "POST",
    "/v1/completions",
    textHandler(services, { format: "completions", credentials: "bearer", idPrefix: "cmpl-" })
  )
  yield* router.add(
    "POST",
    "/v1/messages",
    textHandler(services, {
      format: "anthropic",
      credentials: "messages",
      idPrefix: "msg_",
      forwardHeaders: ["anthropic-beta"]
    })
  )
  yield* router.add(
    "POST",
    "/v1/responses",
    textHandler(services, {
      format: "openai-responses",
      credentials: "bearer",
      idPrefix: "resp_",
      prepare: prepareResponses
    })
  )
  const countTokens = yield* CountTokens
  const embeddings = yield* Embeddings
  const generate = textHandler(services, {
    format: "gemini",
    credentials: "generate-content",
    idPrefix: "",
    // Only reached for a path that decoded (see `generateContent`).
    fromPath: (url) => generateContentPath(url) ?? { model: "", stream: false, jsonArray: false }
  })
  // Only generateContent and streamGenerateContent generate (and bill); countTokens is counted for free;
  // embedContent and batchEmbedContents embed (and bill, see `EmbeddingRoutes.ts`); any other method (or none)
  // is a route the gateway does not have.
  const generateContent = (httpRequest: HttpServerRequest.HttpServerRequest) => {
    const url = new URL(httpRequest.url, "http://localhost")
    const path = generateContentPath(url)
    if (path !== undefined && GENERATION_METHODS.has(path.method)) return generate(httpRequest)
    if (path?.method === "countTokens") return countTokens.handle(httpRequest, path.model)
    if (path?.method === "embedContent" || path?.method === "batchEmbedContents") {
      return embeddings.gemini(httpRequest, path.model, path.method === "batchEmbedContents")
    }
    const error = path === undefined
      ? new InvalidRequest({ message: "The model in the path holds a malformed percent-escape." })
      : new RouteNotFound({ method: httpRequest.method, path: url.pathname.slice(0, 200) })
    return Effect.fail(error).pipe(respondWith(formatOf("gemini").encodeError))
  }
  // The messages format's free count (Claude Code asks it before long turns).
  yield* router.add("POST", "/v1/messages/count_tokens", countTokens.messages)
  yield* router.add("POST", "/v1beta/models/*", generateContent)
  // @google/genai defaults to the `v1` API version: accept its paths too.
  yield* router.add("POST", "/v1/models/*", generateContent)
}))
