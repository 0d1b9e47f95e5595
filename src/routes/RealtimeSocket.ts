/**
 * `GET /v1/realtime?model=…` with `Upgrade: websocket`: OpenAI's Realtime API relayed to an `openai` channel's
 * own Realtime socket, billed per `response.done` (`relay/realtime/RealtimeSession.ts`).
 *
 * The handshake, in order (a refusal is an HTTP answer in OpenAI's error envelope, never a silent close):
 * the caller's key from `Authorization: Bearer` or, for browsers, the subprotocol `openai-insecure-api-key.<key>`
 * (the `openai` package's `realtime/websocket.ts` offers `realtime` with it; the answer then selects `realtime`,
 * and the key protocol is never sent upstream) → the model's candidates in the caller's group, `openai` channels
 * only → a price that can bill audio (`isRealtimePriced`, else `model_price_not_set`) → the caller's rate-limit slot
 * (concurrency while open) → the session's first float (`ledger.hold`) → the upstream socket, tried candidate by
 * candidate until one opens (failover only here; `relay/realtime/RealtimeUpstream.ts`) at
 * `wss://<base>/v1/realtime?model=<upstream model>` (the base URL
 * rule of `upstreams/BaseUrl.ts`, `http`→`ws`, `https`→`wss`) with `Authorization: Bearer <channel key>` and no
 * `OpenAI-Beta` header (the GA interface `OpenAIRealtimeWS` of `openai/realtime/ws` speaks; the beta one added
 * `OpenAI-Beta: realtime=v1`) → the upgrade. Open sessions are closed with 1001 when the app shuts down, their
 * floats settled before the ledger closes.
 *
 * @since 0.3.0
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import type { ChannelType } from "../domain/ChannelType.ts"
import { isRealtimePriced, realtimeBound } from "../domain/Pricing.ts"
import { InvalidApiKey, InvalidRequest, ModelNotFound, UpstreamFailed } from "../errors/GatewayError.ts"
import { CLIENT_SECRET_PREFIX, decodeClientSecretRequest } from "../formats/openai/realtime/ClientSecretRequest.ts"
import { encodeOpenAiError } from "../formats/openai/shared/ErrorBody.ts"
import { readJsonObject } from "../http/Body.ts"
import { clientAddressOf } from "../http/ClientAddress.ts"
import { credentialOf, headerOf } from "../http/Credentials.ts"
import { respondWith } from "../http/Respond.ts"
import { isWebSocketRequest, offeredProtocols, upgradeWebSocket } from "../http/WebSocketHandshake.ts"
import { makeWebSocketSessions, WebSocketSessions } from "../http/WebSocketSessions.ts"
import { CurrentMetrics } from "../observability/Metrics.ts"
import { TracingEnabled } from "../observability/Tracing.ts"
import { Ledger } from "../billing/Ledger.ts"
import { limitSubjects } from "../relay/pipeline/BilledPipeline.ts"
import { priceFor } from "../relay/pipeline/OneShot.ts"
import { startRealtimeSession } from "../relay/realtime/RealtimeSession.ts"
import { outcomeOf } from "../relay/pipeline/Failover.ts"
import { openUpstream, type UpstreamSocket } from "../relay/realtime/RealtimeUpstream.ts"
import { Auth, type Principal } from "../services/Auth.ts"
import { RealtimeSecrets } from "../services/RealtimeSecrets.ts"
import { type Candidate, ChannelRouter } from "../services/ChannelRouter.ts"
import { GatewaySettings } from "../services/GatewaySettings.ts"
import { RateLimiter } from "../services/RateLimiter.ts"
import { Catalog } from "../storage/Catalog.ts"

/** The channel types whose upstream has a Realtime socket (`relay/realtime/RealtimeUpstream.ts`). */
const REALTIME_TYPES: ReadonlySet<ChannelType> = new Set(["openai", "azure"])

/** Azure OpenAI's GA Realtime path, as the `openai` package's `buildRealtimeURL` makes it for an `AzureOpenAI` client. */
const AZURE_REALTIME_PATH = "/openai/v1/realtime"

/** Largest `POST /v1/realtime/client_secrets` body read, in bytes. */
const CLIENT_SECRET_BODY_BYTES = 256 * 1024

/** The browser subprotocol that carries a key (`openai` package, `realtime/websocket.ts`). */
const KEY_PROTOCOL = "openai-insecure-api-key."
/** Milliseconds the responses in flight on open sessions may take to finish at shutdown before the 1001 close. */
const SHUTDOWN_GRACE_MILLIS = 5_000

/** @category services */
export class RealtimeSocket extends Context.Service<RealtimeSocket, {
  /** `GET /v1/realtime`: the handshake, then the session. Never fails: refusals are rendered in OpenAI's envelope. */
  readonly handshake: (
    httpRequest: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /**
   * `POST /v1/realtime/client_secrets`: an ephemeral key for a browser (`services/RealtimeSecrets.ts`), after the
   * same model and price checks as the handshake. Never fails: refusals are rendered in OpenAI's envelope.
   */
  readonly createClientSecret: (
    httpRequest: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** Sessions open now. */
  readonly open: () => number
}>()("sluice/routes/RealtimeSocket") {
  /**
   * Needs `Auth`, `ChannelRouter`, `Catalog`, `Ledger`, `RateLimiter`, `GatewaySettings`, `RealtimeSecrets` and
   * `WebSocketSessions`.
   */
  static readonly layer = Layer.effect(
    RealtimeSocket,
    Effect.gen(function* () {
      const auth = yield* Auth
      const router = yield* ChannelRouter
      const catalog = yield* Catalog
      const ledger = yield* Ledger
      const limiter = yield* RateLimiter
      const settings = yield* GatewaySettings
      const metrics = yield* CurrentMetrics
      const sessions = yield* WebSocketSessions
      const secrets = yield* RealtimeSecrets
      const own = makeWebSocketSessions()
      const unregister = metrics?.pullLabelled(
        "sluice_websocket_open",
        "WebSocket sessions open now, by route",
        { route: "/v1/realtime" },
        () => own.size()
      )
      // A shutdown drains the sessions before the server stops (`WebSocketSessions`); closing the app drains
      // whatever is still open, so every float is settled before the ledger closes.
      yield* Effect.addFinalizer(() =>
        Effect.promise(async () => {
          unregister?.()
          await own.drain(SHUTDOWN_GRACE_MILLIS)
        })
      )

      const handshake = (httpRequest: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          if (!isWebSocketRequest(httpRequest)) {
            return yield* new InvalidRequest({
              message: "GET /v1/realtime opens a WebSocket: send `Upgrade: websocket`."
            })
          }
          const offered = offeredProtocols(httpRequest)
          const keyProtocol = offered.find((protocol) => protocol.startsWith(KEY_PROTOCOL))
          const url = new URL(httpRequest.url, "http://gateway")
          // Azure's path (`AzureOpenAI` + `OpenAIRealtimeWS.azure`) sends the key as `api-key`.
          const key = (url.pathname === AZURE_REALTIME_PATH ? headerOf(httpRequest, "api-key") : undefined) ??
            credentialOf("bearer", httpRequest) ?? keyProtocol?.slice(KEY_PROTOCOL.length)
          const requested = url.searchParams.get("model") ?? ""
          const clientAddress = clientAddressOf(httpRequest)
          let principal: Principal
          let model = requested
          let sessionSettings: Record<string, unknown> | undefined
          if (key !== undefined && key.startsWith(CLIENT_SECRET_PREFIX)) {
            const secret = yield* secrets.resolve(key)
            if (Option.isNone(secret)) return yield* new InvalidApiKey({ reason: "unknown" })
            principal = yield* auth.authenticateDigest(secret.value.keyHash, clientAddress)
            if (requested !== "" && requested !== secret.value.model) {
              return yield* new InvalidRequest({
                message: `This client secret is bound to another model than "${requested.slice(0, 200)}".`,
                param: "model"
              })
            }
            model = secret.value.model
            sessionSettings = secret.value.session
          } else {
            principal = yield* auth.authenticate(key, clientAddress)
          }
          if (model === "") {
            return yield* new InvalidRequest({ message: "Missing required parameter: `model`.", param: "model" })
          }
          const { candidates, price, ratio, limits } = yield* realtimeRoute(principal, model)
          const float = realtimeBound(
            ratio,
            price,
            settings.realtimeFloatInputTokens,
            settings.realtimeFloatOutputTokens
          )
          const subjects = limitSubjects(principal, limits)
          const permit = yield* limiter.acquire(subjects)
          const firstHold = yield* ledger.hold(principal, float).pipe(Effect.onError(() => permit.release(0)))
          const giveBack = Effect.andThen(ledger.release(firstHold), permit.release(0))
          let opened: { readonly socket: UpstreamSocket; readonly candidate: Candidate } | undefined
          let lastFailure: UpstreamFailed | undefined
          for (const candidate of candidates) {
            const attempt = yield* Effect.result(openUpstream(candidate))
            if (attempt._tag === "Success") {
              yield* router.report(candidate, { _tag: "Success" })
              opened = { socket: attempt.success, candidate }
              break
            }
            lastFailure = attempt.failure
            // A refused handshake is reported as its classified error is over HTTP (a refused key disabled); a
            // request error (400) goes back to the caller at once, as failover does.
            const outcome = outcomeOf(attempt.failure)
            if (outcome !== undefined) yield* router.report(candidate, outcome)
            if (!attempt.failure.retryable) break
          }
          if (opened === undefined) {
            yield* giveBack
            return yield* (lastFailure ??
              new UpstreamFailed({ kind: "network", status: 502, message: "No channel's Realtime socket opened." }))
          }
          // A client secret's session settings go first, before any event of the caller's.
          if (sessionSettings !== undefined) {
            opened.socket.send(JSON.stringify({ type: "session.update", session: sessionSettings }))
          }
          const upgrade = upgradeWebSocket(httpRequest, offered.includes("realtime") ? "realtime" : undefined)
          if (upgrade === undefined) {
            opened.socket.close(1000, "Caller could not be upgraded")
            yield* giveBack
            return yield* new InvalidRequest({ message: "The WebSocket handshake could not be completed." })
          }
          const context = yield* Effect.context<never>()
          const run = <A>(effect: Effect.Effect<A>): Promise<A> => Effect.runPromiseWith(context)(effect)
          const socketId = `rtsock_${crypto.randomUUID().replaceAll("-", "")}`
          const started = yield* Clock.currentTimeMillis
          const session = startRealtimeSession(
            {
              socketId,
              principal,
              model,
              candidate: opened.candidate,
              price,
              ratio,
              float,
              firstHold,
              permit,
              // Per response: rpm and tpm only (the socket's own slot already counts against the concurrency).
              admitResponse: limiter.acquire(
                subjects.map((subject) => ({
                  key: subject.key,
                  limits: { rpm: subject.limits.rpm, tpm: subject.limits.tpm }
                }))
              ),
              ledger,
              metrics,
              maxFrameBytes: settings.websocket.maxFrameBytes,
              eventsPerSecond: settings.realtimeMaxEventsPerSecond,
              idleMillis: settings.websocket.idleSeconds * 1000,
              traced: yield* TracingEnabled,
              started,
              run
            },
            upgrade.socket,
            opened.socket
          )
          own.add(session)
          sessions.add(session)
          yield* Effect.logInfo("Realtime socket opened").pipe(Effect.annotateLogs({
            socket_id: socketId,
            model,
            channel: opened.candidate.channel.name
          }))
          return upgrade.response
        }).pipe(respondWith(encodeOpenAiError))

      /** The model's Realtime candidates (openai and azure channels) in the caller's group, and its audio prices. */
      const realtimeRoute = (principal: Principal, model: string) =>
        Effect.gen(function* () {
          const candidates = (yield* router.candidates(principal, model)).filter((candidate) =>
            REALTIME_TYPES.has(candidate.channel.type)
          )
          if (candidates.length === 0) return yield* new ModelNotFound({ model })
          const priced = yield* priceFor(catalog, model, principal.group, isRealtimePriced)
          return { candidates, ...priced }
        })

      const createClientSecret = (httpRequest: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          const principal = yield* auth.authenticate(credentialOf("bearer", httpRequest), clientAddressOf(httpRequest))
          const body = yield* readJsonObject(httpRequest, CLIENT_SECRET_BODY_BYTES)
          const asked = yield* decodeClientSecretRequest(body)
          yield* realtimeRoute(principal, asked.model)
          const created = yield* secrets.create(principal.tokenId, asked.model, asked.session, asked.seconds)
          return HttpServerResponse.jsonUnsafe({
            value: created.value,
            expires_at: created.expiresAt,
            session: {
              ...asked.session,
              id: `sess_${crypto.randomUUID().replaceAll("-", "")}`,
              object: "realtime.session",
              type: "realtime",
              model: asked.model,
              expires_at: created.expiresAt
            }
          })
        }).pipe(respondWith(encodeOpenAiError))

      return RealtimeSocket.of({ handshake, createClientSecret, open: own.size })
    })
  )
}

/**
 * `GET /v1/realtime`, Azure's `GET /openai/v1/realtime` (the path `OpenAIRealtimeWS.azure` opens, `?model=<deployment>`
 * naming the gateway's model) and `POST /v1/realtime/client_secrets`.
 *
 * @category routes
 */
export const RealtimeRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const socket = yield* RealtimeSocket
  yield* router.add("GET", "/v1/realtime", socket.handshake)
  yield* router.add("GET", AZURE_REALTIME_PATH, socket.handshake)
  yield* router.add("POST", "/v1/realtime/client_secrets", socket.createClientSecret)
}))
