/**
 * The text generation routes of the spec ("Endpoints"): chat completions,
 * legacy completions, messages, Responses and generate-content, all over the
 * shared relay.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import { Auth } from "../services/Auth.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { Relay } from "../services/Relay.ts"
import { textHandler } from "./TextRoute.ts"

/** `…/models/{model}:{method}` → model, whether it streams, and the JSON-array framing. */
const generateContentPath = (url: URL) => {
  const last = decodeURIComponent(url.pathname.slice(url.pathname.lastIndexOf("/") + 1))
  const colon = last.lastIndexOf(":")
  const model = colon === -1 ? last : last.slice(0, colon)
  const method = colon === -1 ? "" : last.slice(colon + 1)
  const stream = method === "streamGenerateContent"
  return { model, stream, jsonArray: stream && url.searchParams.get("alt") !== "sse" }
}

/** @category routes */
export const TextRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const services = { auth: yield* Auth, relay: yield* Relay, settings: yield* GatewaySettings }
  yield* router.add(
    "POST",
    "/v1/chat/completions",
    textHandler(services, { format: "openai-chat", credentials: "bearer", idPrefix: "chatcmpl-" })
  )
  yield* router.add(
    "POST",
    "/v1/completions",
    textHandler(services, { format: "completions", credentials: "bearer", idPrefix: "cmpl-" })
  )
  yield* router.add(
    "POST",
    "/v1/messages",
    textHandler(services, { format: "anthropic", credentials: "messages", idPrefix: "msg_" })
  )
  yield* router.add(
    "POST",
    "/v1/responses",
    textHandler(services, { format: "openai-responses", credentials: "bearer", idPrefix: "resp_" })
  )
  yield* router.add(
    "POST",
    "/v1beta/models/*",
    textHandler(services, {
      format: "gemini",
      credentials: "generate-content",
      idPrefix: "",
      fromPath: generateContentPath
    })
  )
}))
