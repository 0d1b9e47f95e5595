/**
 * What a route hands the relay, and the side endpoints some channels have.
 *
 * @since 0.1.0
 */
import type { Effect } from "effect"
import type { OutputPart } from "../../canonical/Content.ts"
import type { Request } from "../../canonical/Request.ts"
import type { Usage } from "../../canonical/Usage.ts"
import type { GatewayError } from "../../errors/GatewayError.ts"
import type { FormatName, ResponseMeta } from "../../formats/Format.ts"
import type { SocketScope } from "../../http/SocketScope.ts"
import type { RequestRecord } from "../../observability/RequestRecord.ts"
import type { Principal } from "../../services/Auth.ts"
import type { Channel } from "../../storage/Catalog.ts"

/** What a route hands the relay. @category models */
export interface RelayInput {
  /** The caller's format. */
  readonly inbound: FormatName
  /**
   * The caller's parsed JSON body (forwarded as is on same-format channels), or the body a route rebuilt from
   * it (Responses: the stored conversation of `previous_response_id` put in `input`, every other field kept).
   */
  readonly raw: Record<string, unknown>
  /** The same request in canonical form. */
  readonly request: Request
  readonly principal: Principal
  readonly requestId: string
  /**
   * The request's telemetry record (`recordOf`), filled as the relay goes; `undefined` without the telemetry
   * middleware.
   */
  readonly record: RequestRecord | undefined
  readonly meta: ResponseMeta
  /** Generate-content without `alt=sse`: stream as one JSON array instead of SSE. */
  readonly jsonArrayStream?: boolean | undefined
  /** Called once with the answer's public id and content after a complete answer. */
  readonly onAnswer?: ((id: string, content: ReadonlyArray<OutputPart>) => Effect.Effect<void>) | undefined
  /**
   * The caller asked for the cost in its stream's final usage (`x-sluice-include-cost: 1`, or chat and completions
   * `stream_options.include_cost`): `cost`, USD, is written there (`Format.withCost`).
   */
  readonly includeCost?: boolean | undefined
  /**
   * Caller headers a same-format channel gets as sent (messages: `anthropic-beta`), by lower-case name; never
   * sent on a translation.
   */
  readonly forwardHeaders?: Readonly<Record<string, string>> | undefined
  /** Forward to a side endpoint of the inbound format instead of the format's own (see `SideEndpoint`). */
  readonly endpoint?: SideEndpoint | undefined
  /**
   * The client socket the request came over (a Responses socket's `response.create`), whose upstream sockets a
   * channel that takes the wire over a WebSocket is reached through (`Adapter.socketTarget`); `undefined` over HTTP.
   */
  readonly socket?: SocketScope | undefined
}

/**
 * A side endpoint of the inbound format that only some channels have (`POST /v1/responses/compact`): only
 * candidates whose channel `supports` it are tried; the caller's body goes to the URL the channel's adapter gives
 * for the inbound format plus `pathSuffix`, unchanged but for the mapped model (and `strip_params`), never
 * streamed; the upstream's 2xx JSON is the answer as is, billed from `usageOf` (when the upstream reports none:
 * the typical prompt estimate and a quarter of the answer's characters).
 *
 * @category models
 */
export interface SideEndpoint {
  /** Appended to the inbound format's upstream URL, e.g. `/compact` (→ `{base}/v1/responses/compact`). */
  readonly pathSuffix: string
  /** Whether a channel serves the endpoint. */
  readonly supports: (channel: Channel) => boolean
  /** The failure when the model has candidates but none of their channels serves the endpoint. */
  readonly unsupported: (model: string) => GatewayError
  /** The usage the upstream reported in its JSON answer, if any. */
  readonly usageOf: (json: unknown) => Usage | undefined
}
