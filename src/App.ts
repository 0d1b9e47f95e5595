/**
 * The one place that sees every layer: storage, the bootstrap file, the
 * services and the routes, composed into a web handler.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Scheduler } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { applyBootstrap } from "./config/ApplyBootstrap.ts"
import type { BootstrapFile } from "./config/BootstrapFile.ts"
import { AccountRoutes } from "./routes/AccountRoutes.ts"
import { AssetRoutes } from "./routes/AssetRoutes.ts"
import { Audio, AudioRoutes } from "./routes/AudioRoutes.ts"
import { AdminUserRoutes } from "./routes/api/AdminUserRoutes.ts"
import { CatalogRoutes } from "./routes/api/CatalogRoutes.ts"
import { ChannelRoutes } from "./routes/api/ChannelRoutes.ts"
import { LogRoutes } from "./routes/api/LogRoutes.ts"
import { HealthRoutes } from "./routes/api/HealthRoutes.ts"
import { OAuthRoutes } from "./routes/api/OAuthRoutes.ts"
import { TaskRoutes } from "./routes/api/TaskRoutes.ts"
import { TokenRoutes } from "./routes/api/TokenRoutes.ts"
import { WebhookRoutes } from "./routes/api/WebhookRoutes.ts"
import { Webhooks } from "./accounts/Webhooks.ts"
import { UserRoutes } from "./routes/api/UserRoutes.ts"
import { CompactRoute } from "./routes/CompactRoute.ts"
import { ConsoleRoutes } from "./routes/ConsoleRoutes.ts"
import { CountTokens } from "./routes/CountTokensRoute.ts"
import { EmbeddingRoutes, Embeddings } from "./routes/EmbeddingRoutes.ts"
import { ImageRoutes, Images } from "./routes/ImageRoutes.ts"
import { ImageTasks, TaskImageRoutes } from "./routes/TaskImageRoutes.ts"
import { VideoRoutes, Videos } from "./routes/VideoRoutes.ts"
import { Midjourney, MidjourneyRoutes } from "./routes/MidjourneyRoutes.ts"
import { Kling, KlingRoutes } from "./routes/KlingRoutes.ts"
import { FallbackRoutes } from "./routes/FallbackRoutes.ts"
import { FileRoutes } from "./routes/FileRoutes.ts"
import { FileStore } from "./files/FileStore.ts"
import { ModelsRoutes } from "./routes/ModelsRoutes.ts"
import { Rerank, RerankRoutes } from "./routes/RerankRoutes.ts"
import { TextRoutes } from "./routes/TextRoutes.ts"
import { BatchRoutes } from "./routes/BatchRoutes.ts"
import { BatchRunner } from "./batches/BatchRunner.ts"
import { BatchDispatch, type DispatchHolder, makeDispatchHolder } from "./batches/BatchDispatch.ts"
import { RESPONSES_SOCKET_PATH, ResponsesSocketRoute } from "./routes/ResponsesSocketRoute.ts"
import { runResponsesSocket } from "./relay/socket/ResponsesSocket.ts"
import { DEFAULT_SOCKET_MEMORY } from "./relay/socket/SocketMemory.ts"
import { innerRequest, makeSocketServer } from "./http/WebSocketAccept.ts"
import { bindSocketScope, makeSocketScope } from "./http/SocketScope.ts"
import { isWebSocketUpgrade, makeSocketMetrics } from "./http/WebSocketUpgrade.ts"
import { RealtimeRoutes, RealtimeSocket } from "./routes/RealtimeSocket.ts"
import { RealtimeSecrets } from "./services/RealtimeSecrets.ts"
import { upgradedResponse } from "./http/WebSocketHandshake.ts"
import { makeWebSocketSessions, type WebSocketSessionRegistry, WebSocketSessions } from "./http/WebSocketSessions.ts"
import { Accounts } from "./accounts/Accounts.ts"
import { Assets } from "./tasks/Assets.ts"
import { AuditLog } from "./accounts/AuditLog.ts"
import { Auth } from "./services/Auth.ts"
import { CatalogAdmin } from "./accounts/CatalogAdmin.ts"
import { ChannelAdmin } from "./accounts/ChannelAdmin.ts"
import { ChannelRouter } from "./services/ChannelRouter.ts"
import { GatewaySettings, settingsOf } from "./services/GatewaySettings.ts"
import { HealthProber } from "./services/HealthProber.ts"
import { LoginThrottle } from "./accounts/LoginThrottle.ts"
import { BudgetMetrics } from "./billing/BudgetMetrics.ts"
import { MediaFetcher } from "./upstreams/transport/MediaFetcher.ts"
import { PasswordHasher } from "./accounts/PasswordHasher.ts"
import { ImageContents } from "./tasks/ImageContents.ts"
import { UrlSigner } from "./services/UrlSigner.ts"
import { VideoListing } from "./tasks/VideoListing.ts"
import { CallerTasks } from "./tasks/CallerTasks.ts"
import { OAuth } from "./accounts/OAuth.ts"
import { QuotaLedger } from "./billing/QuotaLedger.ts"
import { Ledger } from "./billing/Ledger.ts"
import { ChargeJournal, type ChargeJournalOptions } from "./billing/journal/ChargeJournal.ts"
import { RateLimiter } from "./services/RateLimiter.ts"
import { AudioRelay } from "./relay/audio/AudioRelay.ts"
import { RerankRelay } from "./relay/rerank/RerankRelay.ts"
import { EmbeddingRelay } from "./relay/embeddings/EmbeddingRelay.ts"
import { ImageRelay } from "./relay/images/ImageRelay.ts"
import { ImageTaskRelay } from "./relay/images/ImageTaskRelay.ts"
import { MidjourneyRelay } from "./relay/midjourney/MidjourneyRelay.ts"
import { VideoContentRelay } from "./relay/videos/VideoContentRelay.ts"
import { CountTokensRelay } from "./relay/text/CountTokensRelay.ts"
import { VideoRelay } from "./relay/videos/VideoRelay.ts"
import { Relay } from "./relay/text/Relay.ts"
import { ResponseStore } from "./services/ResponseStore.ts"
import { Sessions } from "./accounts/Sessions.ts"
import { TaskPoller } from "./tasks/TaskPoller.ts"
import { TaskStore } from "./tasks/TaskStore.ts"
import { Tokens } from "./accounts/Tokens.ts"
import { UpstreamClient } from "./upstreams/transport/UpstreamClient.ts"
import { UsageLog } from "./billing/UsageLog.ts"
import { UsageQueries } from "./accounts/UsageQueries.ts"
import { HealthQueries } from "./accounts/HealthQueries.ts"
import { HealthRollup } from "./accounts/HealthRollup.ts"
import { UserCaps } from "./services/UserCaps.ts"
import { Catalog } from "./storage/Catalog.ts"
import { StorageErrorCounter } from "./http/Respond.ts"
import { CurrentMetrics } from "./observability/Metrics.ts"
import { Telemetry, type TelemetryOptions } from "./observability/Telemetry.ts"
import { otlpLayer, type OtlpOptions } from "./observability/Tracing.ts"
import { OpsRoutes } from "./routes/OpsRoutes.ts"
import { layerFromSettings } from "./storage/Database.ts"
import { rememberClientAddress, trustProxies } from "./http/ClientAddress.ts"
import { BodyTimeout } from "./http/BodyDeadline.ts"
import { makeOpenRequests } from "./http/OpenRequests.ts"
import { ProxyNotice } from "./http/ProxyNotice.ts"
import { DEFAULT_BODY_TIMEOUT_SECONDS, DEFAULT_MAX_OPEN_REQUESTS_PER_ADDRESS } from "./config/Env.ts"

/** Where the app keeps its data and what it was configured with. @category models */
export interface AppOptions {
  readonly databaseUrl: string | undefined
  readonly dataDir: string
  readonly redisUrl: string | undefined
  /** Prefix of the rate limiter's Redis keys (default `sluice:ratelimit:`); tests give each gateway its own. */
  readonly redisPrefix?: string | undefined
  readonly file: BootstrapFile | undefined
  /** Usage log flush interval in milliseconds (default 250). */
  readonly usageFlushMillis?: number | undefined
  /** The root user's password on a first start (`SLUICE_ROOT_PASSWORD`); unset → generated and logged once. */
  readonly rootPassword?: string | undefined
  /**
   * Metrics, the access log and where Effect's log lines go. Default: metrics
   * on, no access log, Effect's own console logger.
   */
  readonly telemetry?: TelemetryOptions | undefined
  /** OTLP export of traces and logs (`OTEL_EXPORTER_OTLP_ENDPOINT`); default none. */
  readonly otlp?: OtlpOptions | undefined
  /** Seconds a request body may take to arrive (`SLUICE_BODY_TIMEOUT_SECONDS`, default 60); 0: no limit. */
  readonly bodyTimeoutSeconds?: number | undefined
  /**
   * Requests one client address may have open at once (`SLUICE_MAX_OPEN_REQUESTS_PER_ADDRESS`, default 256);
   * 0: no limit. Counted only for requests the handler is given the server's `info` with.
   */
  readonly maxOpenRequestsPerAddress?: number | undefined
  /** The address the server listens on (`HOST`), for the startup notices; unset: none. */
  readonly listenHost?: string | undefined
  /** Seconds after which an instance without a lease renewal counts as dead (`SLUICE_LEASE_STALE_SECONDS`, 120). */
  readonly leaseStaleSeconds?: number | undefined
}

/**
 * Where the charge journal is kept: the `charge_journal` table on PostgreSQL, with a spill file in the data
 * directory; a file beside the embedded store's data (`<data dir>/charge-journal`) otherwise. A store in memory
 * (the demo) has no file and needs none: its charges are as durable as the store.
 */
const journalOptions = (options: AppOptions, fsync: boolean): ChargeJournalOptions => {
  const table = options.databaseUrl !== undefined && options.databaseUrl !== ""
  const inMemory = options.dataDir.startsWith("memory://")
  return {
    table,
    dir: inMemory ? undefined : `${options.dataDir.replace(/\/+$/, "")}/charge-journal`,
    volatileStore: inMemory && !table,
    fsync
  }
}

/** Telemetry when none is configured: metrics only. */
const metricsOnly: TelemetryOptions = {
  metrics: true,
  accessLog: false,
  format: "json",
  level: "info",
  sink: () => {}
}

/**
 * Creates the root user when none exists (a first start), with
 * `rootPassword`, or a generated password written once to the log.
 */
const rootUser = (rootPassword: string | undefined) =>
  Layer.effectDiscard(Effect.gen(function* () {
    const accounts = yield* Accounts
    const generated = yield* accounts.ensureRoot(rootPassword)
    if (generated._tag === "Some") {
      yield* Effect.logWarning(
        `Created the root user "root" with the generated password ${generated.value} ` +
          "(shown this once; log in and change it, or set SLUICE_ROOT_PASSWORD before the first start)"
      )
    } else if (rootPassword !== undefined) {
      yield* Effect.logDebug("Root user present")
    }
  }))

/**
 * The application layer: every route with every service it needs.
 *
 * @category layers
 */
export const appLayer = (
  options: AppOptions,
  telemetry: Telemetry = new Telemetry(metricsOnly),
  sockets: WebSocketSessionRegistry = makeWebSocketSessions(),
  dispatch: DispatchHolder = makeDispatchHolder()
) => {
  const settings = settingsOf(options.file)
  const database = layerFromSettings({ databaseUrl: options.databaseUrl, dataDir: options.dataDir })
  const bootstrapped = Layer.effectDiscard(
    options.file === undefined ? Effect.void : applyBootstrap(options.file)
  ).pipe(Layer.provideMerge(database))
  const catalog = Catalog.layer.pipe(Layer.provideMerge(bootstrapped))
  const services = Layer.mergeAll(
    Auth.layer(settings.keyCacheTtlMs),
    ChannelRouter.layer(settings),
    // The task store bills through the ledger and the usage log (one transaction on their shared client).
    TaskStore.layer.pipe(
      Layer.provideMerge(Ledger.layer),
      Layer.provideMerge(
        UsageLog.layer(options.usageFlushMillis).pipe(
          Layer.provideMerge(QuotaLedger.layer({ staleMillis: (options.leaseStaleSeconds ?? 120) * 1000 })),
          Layer.provideMerge(ChargeJournal.layer(journalOptions(options, settings.journalFsync)))
        )
      )
    ),
    ResponseStore.layer,
    FileStore.layer({
      maxFileBytes: settings.fileMaxBytes,
      maxUserBytes: settings.fileStoragePerUserBytes,
      sweepIntervalMillis: settings.fileSweepIntervalMillis,
      maxUploadsInFlight: settings.fileMaxUploadsInFlight
    }),
    UpstreamClient.layer,
    GatewaySettings.layer(options.file),
    MediaFetcher.layer(settings),
    Assets.layer(settings),
    UserCaps.layer(settings),
    ImageContents.layer,
    UrlSigner.layer,
    VideoListing.layer,
    options.redisUrl === undefined
      ? RateLimiter.layerMemory
      : RateLimiter.layerRedis({ url: options.redisUrl, prefix: options.redisPrefix })
  ).pipe(Layer.provideMerge(catalog))
  const sessions = Sessions.layer({ idleMillis: settings.sessionIdleMillis, maxMillis: settings.sessionMaxMillis })
  const throttleOptions = {
    maxFailures: settings.loginMaxFailures,
    windowMillis: settings.loginWindowMillis,
    addressMaxFailures: settings.loginAddressMaxFailures,
    registrationsPerAddress: settings.registrationsPerAddress,
    registrationWindowMillis: settings.registrationWindowMillis
  }
  const throttle = options.redisUrl === undefined
    ? LoginThrottle.layerMemory(throttleOptions)
    : LoginThrottle.layerRedis(throttleOptions, options.redisUrl, `${options.redisPrefix ?? "sluice:"}login:`)
  const hasher = PasswordHasher.layer({ workers: settings.hashWorkers, queue: settings.hashQueue })
  const accounts = Layer.mergeAll(
    Accounts.layer(settings).pipe(Layer.provideMerge(Layer.mergeAll(sessions, throttle, hasher))),
    Tokens.layer,
    UsageQueries.layer,
    AuditLog.layer,
    BudgetMetrics.layer(),
    Webhooks.layer({ allowHosts: options.file?.settings?.webhook_allow_hosts ?? [] })
  ).pipe(Layer.provideMerge(services))
  const relay = Layer.mergeAll(
    Relay.layer,
    EmbeddingRelay.layer,
    AudioRelay.layer,
    RerankRelay.layer,
    ImageRelay.layer,
    VideoRelay.layer,
    VideoContentRelay.layer,
    CountTokensRelay.layer,
    ImageTaskRelay.layer,
    MidjourneyRelay.layer,
    TaskPoller.layer(),
    ChannelAdmin.layer.pipe(Layer.provideMerge(HealthProber.layer(settings.probeIntervalSeconds))),
    CatalogAdmin.layer,
    HealthQueries.layer,
    HealthRollup.layer(settings.healthRollupIntervalSeconds),
    OAuth.layer(options.file, settings),
    rootUser(options.rootPassword)
  ).pipe(Layer.provideMerge(accounts))
  return Layer.mergeAll(
    TextRoutes,
    BatchRoutes,
    ResponsesSocketRoute,
    RealtimeRoutes,
    EmbeddingRoutes,
    AudioRoutes,
    RerankRoutes,
    ImageRoutes,
    TaskImageRoutes,
    VideoRoutes,
    MidjourneyRoutes,
    KlingRoutes,
    AssetRoutes,
    FileRoutes,
    CompactRoute,
    ModelsRoutes,
    AccountRoutes,
    UserRoutes,
    TokenRoutes,
    WebhookRoutes,
    LogRoutes,
    HealthRoutes,
    TaskRoutes,
    AdminUserRoutes,
    ChannelRoutes,
    CatalogRoutes,
    OAuthRoutes,
    OpsRoutes(telemetry.metrics, options.listenHost),
    ConsoleRoutes,
    FallbackRoutes,
    ProxyNotice,
    telemetry.middlewareLayer
  ).pipe(
    Layer.provide(Layer.mergeAll(
      CountTokens.layer,
      Embeddings.layer,
      Audio.layer,
      Rerank.layer,
      Images.layer,
      ImageTasks.layer,
      Videos.layer,
      Midjourney.layer,
      Kling.layer,
      // Batch lines go through the gateway's own handler (`dispatch`, set by `makeHandler` once it is made).
      BatchRunner.layer.pipe(Layer.provide(BatchDispatch.layer(dispatch))),
      RealtimeSocket.layer.pipe(
        Layer.provide(Layer.merge(Layer.succeed(WebSocketSessions, sockets), RealtimeSecrets.layer))
      )
    )),
    // The caller's task reads poll a stale task on the spot, so they sit above the poller.
    Layer.provide(CallerTasks.layer.pipe(Layer.provideMerge(relay)))
  )
}

/**
 * Effect's scheduler in its `sync` mode: a fiber resumed by I/O (an upstream
 * answer, a body chunk) continues in a microtask rather than after a
 * `setImmediate` hop, which saves a macrotask per asynchronous step of every
 * request. Nothing in Sluice runs CPU-bound loops long enough to need the
 * event-loop yields of the default mode (see `Scheduler.MixedScheduler`).
 *
 * @category layers
 */
export const schedulerLayer = Layer.succeed(Scheduler.Scheduler, new Scheduler.MixedScheduler("sync"))

/**
 * The web handler and its disposal, which closes every layer (flushing the
 * usage log, closing the store). The server passes each request with its
 * `info` (`Deno.serve`'s: the peer address, and when the answer was sent);
 * without it (an in-process call) the caller's address is unknown and the
 * request is not counted among the open requests of an address. Every `/api/*`
 * answer carries `Cache-Control: no-store`.
 *
 * @category handlers
 */
export const makeHandler = (options: AppOptions) => {
  const telemetry = new Telemetry(options.telemetry ?? metricsOnly)
  const settings = settingsOf(options.file)
  const trusted = settings.trustedProxies
  const open = makeOpenRequests(options.maxOpenRequestsPerAddress ?? DEFAULT_MAX_OPEN_REQUESTS_PER_ADDRESS)
  const bodyTimeout = Layer.succeed(BodyTimeout, (options.bodyTimeoutSeconds ?? DEFAULT_BODY_TIMEOUT_SECONDS) * 1000)
  const sockets = makeWebSocketSessions()
  const dispatch = makeDispatchHolder()
  const web = HttpRouter.toWebHandler(
    appLayer(options, telemetry, sockets, dispatch).pipe(
      Layer.provide(HttpServer.layerServices),
      Layer.provideMerge(schedulerLayer),
      Layer.provideMerge(Layer.merge(observabilityLayer(options, telemetry), bodyTimeout))
    ),
    { disableLogger: true }
  )
  // Batch lines are the gateway's own inner requests: the router's handler, past the open-requests bound.
  dispatch.handler = web.handler
  const socketMetrics = makeSocketMetrics(telemetry.metrics, [RESPONSES_SOCKET_PATH])
  const responsesSockets = makeSocketServer(RESPONSES_SOCKET_PATH, {
    metrics: socketMetrics,
    accessLog: options.telemetry?.accessLog === true ? telemetry.write : undefined,
    handshake: web.handler,
    admit: (request, completed) => {
      const refused = open.admit(request, completed, false)
      if (refused !== undefined) telemetry.metrics?.rateLimited()
      return refused
    }
  })
  /** The Responses WebSocket mode (`relay/socket/ResponsesSocket.ts`): each `response.create` a POST of its own. */
  const acceptResponsesSocket = (request: Request, info: Deno.ServeHandlerInfo | undefined) => {
    const peer = info === undefined ? undefined : { remoteAddr: info.remoteAddr }
    return responsesSockets.accept(request, (accepted) => {
      // What the socket keeps across its responses (its upstream sockets), closed once its last response settled.
      const scope = makeSocketScope(accepted.socketId)
      return runResponsesSocket({
        socket: accepted.socket,
        socketId: accepted.socketId,
        limits: settings.websocket,
        memory: DEFAULT_SOCKET_MEMORY,
        dispatch: (body, requestId, signal) =>
          web.handler(
            bindSocketScope(innerRequest(request, peer, trusted, "POST", request.url, body, requestId, signal), scope)
          ),
        onFrame: accepted.frame,
        onClosed: (code, tally) => {
          scope.close()
          accepted.closed(code, tally)
        }
      })
    })
  }
  /** Drains every socket of both kinds until `deadline` (epoch milliseconds). */
  const drainAll = (deadline: number): Promise<void> =>
    Promise.all([responsesSockets.drain(deadline), sockets.drain(Math.max(0, deadline - Date.now()))]).then(() =>
      undefined
    )
  return {
    ...web,
    /** Closes every layer, first cutting the sockets still open (their responses billed as cut streams). */
    dispose: async () => {
      await drainAll(Date.now())
      socketMetrics.remove()
      await web.dispose()
    },
    /**
     * Lets the responses in flight on every socket (Responses and Realtime) finish until `deadline` (epoch
     * milliseconds), then cuts the rest and closes each socket with 1001: call before the server's `shutdown()`,
     * which would close them at once (the graceful shutdown, `main.ts`).
     */
    drainSockets: drainAll,
    handler: async (request: Request, info?: Deno.ServeHandlerInfo): Promise<Response> => {
      if (info !== undefined) rememberClientAddress(request, info)
      // The trusted proxies ride on the request, so every route reads the caller's address and scheme the same way.
      if (trusted.length > 0) trustProxies(request, trusted)
      if (isWebSocketUpgrade(request) && pathOf(request.url) === RESPONSES_SOCKET_PATH) {
        return acceptResponsesSocket(request, info)
      }
      const api = isApiPath(request.url)
      const refused = info === undefined ? undefined : open.admit(request, info.completed, api)
      if (refused !== undefined) telemetry.metrics?.rateLimited()
      const answered = refused ?? await web.handler(request)
      // A WebSocket handshake's 101 travels beside the router's placeholder (see `http/WebSocketHandshake.ts`).
      const response = upgradedResponse(request) ?? answered
      return api ? noStore(response) : response
    }
  }
}

/** The path of `url` (no query). */
const pathOf = (url: string): string => {
  const start = url.indexOf("/", url.indexOf("//") + 2)
  if (start < 0) return "/"
  const query = url.indexOf("?", start)
  return url.slice(start, query < 0 ? undefined : query)
}

/** Whether `url` is under `/api/`, whose answers hold account data no cache may keep. */
const isApiPath = (url: string): boolean => {
  const start = url.indexOf("/", url.indexOf("//") + 2)
  return start >= 0 && url.startsWith("/api/", start)
}

/** `response` with `Cache-Control: no-store` (a copy when its headers are immutable). */
const noStore = (response: Response): Response => {
  try {
    response.headers.set("cache-control", "no-store")
    return response
  } catch {
    const headers = new Headers(response.headers)
    headers.set("cache-control", "no-store")
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers })
  }
}

/**
 * What every layer and every request fiber sees of the telemetry: the
 * metrics (and the storage-error counter `http/Respond.ts` reports to),
 * Effect's loggers (when telemetry is configured) and the OTLP tracer and
 * logger (when an endpoint is).
 */
const observabilityLayer = (options: AppOptions, telemetry: Telemetry) => {
  const metrics = Layer.merge(
    Layer.succeed(CurrentMetrics, telemetry.metrics),
    Layer.succeed(StorageErrorCounter, (operation: string) => telemetry.metrics?.storageError(operation))
  )
  const loggers = options.telemetry === undefined ? Layer.empty : telemetry.loggerLayer
  const logging = options.otlp === undefined ? loggers : otlpLayer(options.otlp).pipe(Layer.provideMerge(loggers))
  return Layer.merge(metrics, logging)
}
