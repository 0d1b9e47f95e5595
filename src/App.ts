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
import { CompactRoute } from "./routes/CompactRoute.ts"
import { CountTokens } from "./routes/CountTokensRoute.ts"
import { EmbeddingRoutes, Embeddings } from "./routes/EmbeddingRoutes.ts"
import { FallbackRoutes } from "./routes/FallbackRoutes.ts"
import { ModelsRoutes } from "./routes/ModelsRoutes.ts"
import { TextRoutes } from "./routes/TextRoutes.ts"
import { Auth } from "./services/Auth.ts"
import { ChannelRouter } from "./services/ChannelRouter.ts"
import { GatewaySettings, settingsOf } from "./services/GatewaySettings.ts"
import { HealthProber } from "./services/HealthProber.ts"
import { MediaFetcher } from "./services/MediaFetcher.ts"
import { QuotaLedger } from "./services/QuotaLedger.ts"
import { RateLimiter } from "./services/RateLimiter.ts"
import { EmbeddingRelay } from "./relay/EmbeddingRelay.ts"
import { Relay } from "./relay/Relay.ts"
import { ResponseStore } from "./services/ResponseStore.ts"
import { UpstreamClient } from "./services/UpstreamClient.ts"
import { UsageLog } from "./services/UsageLog.ts"
import { Catalog } from "./storage/Catalog.ts"
import { CurrentMetrics } from "./observability/Metrics.ts"
import { Telemetry, type TelemetryOptions } from "./observability/Telemetry.ts"
import { otlpLayer, type OtlpOptions } from "./observability/Tracing.ts"
import { OpsRoutes } from "./routes/OpsRoutes.ts"
import { layerFromSettings } from "./storage/Database.ts"

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
  /**
   * Metrics, the access log and where Effect's log lines go. Default: metrics
   * on, no access log, Effect's own console logger.
   */
  readonly telemetry?: TelemetryOptions | undefined
  /** OTLP export of traces and logs (`OTEL_EXPORTER_OTLP_ENDPOINT`); default none. */
  readonly otlp?: OtlpOptions | undefined
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
 * The application layer: every route with every service it needs.
 *
 * @category layers
 */
export const appLayer = (options: AppOptions, telemetry: Telemetry = new Telemetry(metricsOnly)) => {
  const settings = settingsOf(options.file)
  const database = layerFromSettings({ databaseUrl: options.databaseUrl, dataDir: options.dataDir })
  const bootstrapped = Layer.effectDiscard(
    options.file === undefined ? Effect.void : applyBootstrap(options.file)
  ).pipe(Layer.provideMerge(database))
  const catalog = Catalog.layer.pipe(Layer.provideMerge(bootstrapped))
  const services = Layer.mergeAll(
    Auth.layer(settings.keyCacheTtlMs),
    ChannelRouter.layer(settings),
    UsageLog.layer(options.usageFlushMillis).pipe(Layer.provideMerge(QuotaLedger.layer())),
    ResponseStore.layer,
    UpstreamClient.layer,
    GatewaySettings.layer(options.file),
    MediaFetcher.layer(settings),
    options.redisUrl === undefined
      ? RateLimiter.layerMemory
      : RateLimiter.layerRedis({ url: options.redisUrl, prefix: options.redisPrefix })
  ).pipe(Layer.provideMerge(catalog))
  const relay = Layer.mergeAll(Relay.layer, EmbeddingRelay.layer, HealthProber.layer(settings.probeIntervalSeconds))
    .pipe(Layer.provideMerge(services))
  return Layer.mergeAll(
    TextRoutes,
    EmbeddingRoutes,
    CompactRoute,
    ModelsRoutes,
    AccountRoutes,
    OpsRoutes(telemetry.metrics),
    FallbackRoutes,
    telemetry.middlewareLayer
  ).pipe(
    Layer.provide(Layer.mergeAll(CountTokens.layer, Embeddings.layer)),
    Layer.provide(relay)
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
 * The web handler (`(Request) => Promise<Response>`) and its disposal, which
 * closes every layer (flushing the usage log, closing the store).
 *
 * @category handlers
 */
export const makeHandler = (options: AppOptions) => {
  const telemetry = new Telemetry(options.telemetry ?? metricsOnly)
  return HttpRouter.toWebHandler(
    appLayer(options, telemetry).pipe(
      Layer.provide(HttpServer.layerServices),
      Layer.provideMerge(schedulerLayer),
      Layer.provideMerge(observabilityLayer(options, telemetry))
    ),
    { disableLogger: true }
  )
}

/**
 * What every layer and every request fiber sees of the telemetry: the
 * metrics, Effect's loggers (when telemetry is configured) and the OTLP
 * tracer and logger (when an endpoint is).
 */
const observabilityLayer = (options: AppOptions, telemetry: Telemetry) => {
  const metrics = Layer.succeed(CurrentMetrics, telemetry.metrics)
  const loggers = options.telemetry === undefined ? Layer.empty : telemetry.loggerLayer
  const logging = options.otlp === undefined ? loggers : otlpLayer(options.otlp).pipe(Layer.provideMerge(loggers))
  return Layer.merge(metrics, logging)
}
