/**
 * The upstream side of a Realtime session: the channel's socket at `wss://<base>/v1/realtime?model=<upstream model>`
 * (the base URL rule of `upstreams/BaseUrl.ts`, then `http`→`ws`, `https`→`wss`), opened with the runtime's
 * `WebSocket` client and `Authorization: Bearer <channel key>` (what `OpenAIRealtimeWS` of `openai/realtime/ws`
 * sends; no `OpenAI-Beta` header, which only the beta interface used), and no subprotocol. An `azure` channel's is
 * Azure's GA path `wss://<resource>/openai/v1/realtime?model=<deployment>` with the key as `api-key` (an `entra:`
 * key as Bearer), on either API family: the path `OpenAIRealtimeWS.azure` opens (the `openai` package's
 * `buildRealtimeURL`; learn.microsoft.com/azure/ai-foundry/openai/how-to/realtime-audio-websockets).
 *
 * @since 0.3.0
 */
import { Effect } from "effect"
import { UpstreamFailed } from "../../errors/GatewayError.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import { channelUrl } from "../../upstreams/Adapter.ts"
import { AZURE_VERSIONS, azureAuthHeaders } from "../../upstreams/AzureTarget.ts"
import { upstreamUrl } from "../../upstreams/BaseUrl.ts"

/**
 * Deno's `WebSocket` client, whose constructor also takes `{headers}` (a Deno extension of the web API); typed here
 * because the DOM typings a program may be checked with (the console's) do not know it.
 */
const HeaderWebSocket = WebSocket as unknown as new (
  url: string,
  options: { readonly headers: Readonly<Record<string, string>> }
) => WebSocket

/** Milliseconds an upstream socket may take to open before the next candidate is tried. */
const UPSTREAM_OPEN_MILLIS = 10_000

/**
 * The `wss://` (or `ws://`) URL of a channel's Realtime socket for `upstreamModel`.
 *
 * @category urls
 */
export const realtimeUrl = (candidate: Candidate): string =>
  (candidate.channel.type === "azure"
    ? upstreamUrl(
      candidate.channel.baseUrl,
      `/openai/v1/realtime?model=${encodeURIComponent(candidate.upstreamModel)}`,
      AZURE_VERSIONS
    )
    : channelUrl(candidate.channel, `/v1/realtime?model=${encodeURIComponent(candidate.upstreamModel)}`))
    .replace(/^http(s?):\/\//i, (_, secure: string) => `ws${secure}://`)

/** The handshake's credential header: the channel key as Bearer, or on `azure` as `api-key` (Entra: Bearer). */
const realtimeAuth = (candidate: Candidate): Record<string, string> =>
  candidate.channel.type === "azure"
    ? azureAuthHeaders(candidate.key.key)
    : { authorization: `Bearer ${candidate.key.key}` }

/**
 * Opens the upstream socket of `candidate`: succeeds once it is open, fails with a retryable `UpstreamFailed`
 * (`network`, or `timeout` after 10 s) when it errs or closes first. Interrupting it closes the socket.
 *
 * @category upstream
 */
export const openUpstream = (candidate: Candidate): Effect.Effect<WebSocket, UpstreamFailed> =>
  Effect.callback<WebSocket, UpstreamFailed>((resume) => {
    let socket: WebSocket
    try {
      socket = new HeaderWebSocket(realtimeUrl(candidate), {
        headers: realtimeAuth(candidate)
      })
    } catch {
      resume(Effect.fail(
        new UpstreamFailed({
          kind: "network",
          status: 502,
          message: "The channel's Realtime URL is not valid.",
          channelId: candidate.channel.id
        })
      ))
      return
    }
    const timer = setTimeout(
      () => failWith("timeout", "The channel's Realtime socket did not open in time."),
      UPSTREAM_OPEN_MILLIS
    )
    const failWith = (kind: "network" | "timeout", message: string) => {
      clearTimeout(timer)
      socket.onopen = socket.onerror = socket.onclose = null
      try {
        socket.close()
      } catch {
        // Not open.
      }
      resume(Effect.fail(new UpstreamFailed({ kind, status: 502, message, channelId: candidate.channel.id })))
    }
    socket.onopen = () => {
      clearTimeout(timer)
      socket.onopen = socket.onerror = socket.onclose = null
      resume(Effect.succeed(socket))
    }
    socket.onerror = () => failWith("network", "The channel's Realtime socket refused the handshake.")
    socket.onclose = () => failWith("network", "The channel's Realtime socket closed during the handshake.")
    return Effect.sync(() => {
      clearTimeout(timer)
      socket.onopen = socket.onerror = socket.onclose = null
      if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) socket.close()
    })
  })
