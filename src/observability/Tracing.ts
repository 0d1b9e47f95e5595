/**
 * Traces and logs over OTLP/HTTP (JSON) through `effect/observability`'s
 * `Otlp` modules, when `OTEL_EXPORTER_OTLP_ENDPOINT` is set: one server span
 * per request (Effect's HTTP server makes it, named `METHOD route-pattern`,
 * continuing a caller's `traceparent`), a child span per upstream
 * attempt (`upstream.attempt`: channel, upstream model, attempt number,
 * status, failover reason), and the ledger's hold, the settlement and the
 * usage-log commit as spans. No attribute holds a prompt, an answer or a key:
 * request headers are not recorded (Effect's default), and the query
 * parameter `key` is redacted from the URL attributes.
 *
 * @since 0.1.0
 */
import { Context, Layer } from "effect"
import { FetchHttpClient, HttpMiddleware, UrlParams } from "effect/http"
import { OtlpLogger, OtlpSerialization, OtlpTracer } from "effect/observability"
import { routeOf } from "./RouteLabel.ts"

/**
 * Whether spans are exported: the relay adds its own spans (attempts, hold,
 * settlement) only then, so a gateway without a collector pays nothing for them.
 *
 * @category services
 */
export const TracingEnabled = Context.Reference<boolean>("sluice/observability/TracingEnabled", {
  defaultValue: () => false
})

/** What the OTLP export needs. @category models */
export interface OtlpOptions {
  /** Base URL of the collector (`…/v1/traces` and `…/v1/logs` are appended). */
  readonly endpoint: string
  readonly serviceName: string
  /** Export interval in milliseconds (default 5000). */
  readonly exportIntervalMillis?: number | undefined
}

/**
 * The OTLP tracer and logger (no metrics: those are scraped), with
 * `TracingEnabled` on and `key` redacted from URL attributes. The logger is
 * added to the loggers already in place (the access log's sink), so give this
 * layer after the telemetry's `loggerLayer`.
 *
 * @category layers
 */
export const otlpLayer = (options: OtlpOptions) => {
  const base = options.endpoint.replace(/\/+$/, "")
  const resource = { serviceName: options.serviceName }
  const exportInterval = options.exportIntervalMillis ?? 5000
  return Layer.mergeAll(
    OtlpTracer.layer({ url: `${base}/v1/traces`, resource, exportInterval }),
    OtlpLogger.layer({ url: `${base}/v1/logs`, resource, exportInterval, mergeWithExisting: true })
  ).pipe(
    Layer.provide([OtlpSerialization.layerJson, FetchHttpClient.layer]),
    Layer.merge(Layer.succeed(TracingEnabled, true)),
    Layer.merge(Layer.succeed(UrlParams.CurrentRedactedNames, ["key", "api_key", "token"])),
    // `POST /v1beta/models/{model}:generateContent`: the route's pattern, not the caller's path.
    Layer.merge(
      Layer.succeed(HttpMiddleware.SpanNameGenerator, (request) => `${request.method} ${routeOf(request.url)}`)
    )
  )
}
