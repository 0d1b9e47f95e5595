/**
 * The upstream side of a Realtime session: the channel's socket at `wss://<base>/v1/realtime?model=<upstream model>`
 * (the base URL rule of `upstreams/BaseUrl.ts`, then `http`→`ws`, `https`→`wss`), opened with the gateway's socket
 * client (`upstreams/transport/ClientSocket.ts`) and `Authorization: Bearer <channel key>` (what `OpenAIRealtimeWS` of `openai/realtime/ws`
 * sends; no `OpenAI-Beta` header, which only the beta interface used), and no subprotocol. An `azure` channel's is
 * Azure's GA path `wss://<resource>/openai/v1/realtime?model=<deployment>` with the key as `api-key` (an `entra:`
 * key as Bearer), on either API family: the path `OpenAIRealtimeWS.azure` opens (the `openai` package's
 * `buildRealtimeURL`; learn.microsoft.com/azure/ai-foundry/openai/how-to/realtime-audio-websockets). A handshake
 * the vendor refuses with an HTTP error is that error as the channel's wire classifies it, as over HTTP: a refused
 * key is `unauthorized` (disabled by the router), a 400 `rejected` (back to the caller, no failover).
 *
 * @since 0.3.0
 */
import { Effect } from "effect"
import { UpstreamFailed } from "../../errors/GatewayError.ts"
import type { Candidate } from "../../services/ChannelRouter.ts"
import { adapters, channelUrl, wireOf } from "../../upstreams/Adapter.ts"
import { type ClientSocket, openClientSocket } from "../../upstreams/transport/ClientSocket.ts"
import { readableErrorBody } from "../../upstreams/transport/UpstreamClient.ts"
import { AZURE_VERSIONS, azureAuthHeaders } from "../../upstreams/AzureTarget.ts"
import { upstreamUrl } from "../../upstreams/BaseUrl.ts"

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

/** An open upstream Realtime socket (the gateway's socket client's). @category models */
export type { ClientSocket as UpstreamSocket } from "../../upstreams/transport/ClientSocket.ts"

/** Largest frame in bytes an upstream Realtime socket may send (an audio delta is far smaller). */
const MAX_FRAME_BYTES = 16 * 1024 * 1024

/**
 * Opens the upstream socket of `candidate`: succeeds once it is open; fails with a retryable `UpstreamFailed`
 * (`network`, or `timeout` after 10 s) when it errs or closes first, and with the classified error of the channel's
 * wire when the vendor answers the handshake with an HTTP error (`unauthorized`, `quota`, `throttled`, `server`:
 * retryable; `rejected`: not). Interrupting it closes the socket.
 *
 * @category upstream
 */
export const openUpstream = (candidate: Candidate): Effect.Effect<ClientSocket, UpstreamFailed> =>
  Effect.flatMap(
    openClientSocket({
      url: realtimeUrl(candidate),
      headers: realtimeAuth(candidate),
      openMillis: UPSTREAM_OPEN_MILLIS,
      maxFrameBytes: MAX_FRAME_BYTES,
      what: "Realtime",
      channelId: candidate.channel.id
    }),
    (handshake) => {
      if (handshake._tag === "Open") return Effect.succeed(handshake.socket)
      const { status, bodyText } = handshake
      if (status < 400 || status > 599) {
        return Effect.fail(
          new UpstreamFailed({
            kind: "network",
            status: 502,
            message: `The channel's Realtime socket answered HTTP ${status}.`,
            channelId: candidate.channel.id
          })
        )
      }
      const wire = wireOf(candidate.channel.type, adapters[candidate.channel.type].nativeFormat)
      const classified = wire.classifyError(status, readableErrorBody(bodyText), undefined)
      return Effect.fail(
        new UpstreamFailed({
          kind: classified.kind,
          status,
          message: classified.message,
          channelId: candidate.channel.id,
          ...(classified.code === undefined ? {} : { code: classified.code })
        })
      )
    }
  )
