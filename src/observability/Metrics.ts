/**
 * The gateway's metrics (docs/OPERATING.md, "Metrics"), as Effect `Metric`s in a
 * registry of their own, exported by `effect/observability`'s
 * `PrometheusMetrics`. Every label comes from a bounded set: route names
 * (`routeOf`), format names, configured model, channel and group names (a
 * model with no price is counted as `other`), status classes and fixed
 * outcome words. No key, prompt or caller-chosen free text is ever a label.
 *
 * Recording is synchronous and allocation-free after a label set's first use
 * (see `Series`); gauges of state the services already keep (usage-log queue,
 * quota leases) are read when scraped (`pull`).
 *
 * @since 0.1.0
 */
import { Context, Metric } from "effect"
import { add, Series } from "./Series.ts"

/** Latency buckets in seconds: 5 ms to 5 min. */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]

/** The label of a status: `2xx`, `4xx`, … (`1xx` for anything below 200). @category labels */
export const statusClass = (status: number): string =>
  status >= 500 ? "5xx" : status >= 400 ? "4xx" : status >= 300 ? "3xx" : status >= 200 ? "2xx" : "1xx"

const counter = (name: string, description: string) => (attributes: Record<string, string>) =>
  Metric.counter(name, { description, attributes, incremental: true })

const histogram = (name: string, description: string) => (attributes: Record<string, string>) =>
  Metric.histogram(name, { description, attributes, boundaries: SECONDS })

/**
 * The metrics of one gateway (one registry, so two gateways in one process,
 * as in the tests, never mix their figures).
 *
 * @category models
 */
export class Metrics {
  /** The context holding this gateway's `Metric.MetricRegistry`; `PrometheusMetrics.formatUnsafe` reads it. */
  readonly context: Context.Context<never>

  readonly #requests = new Series(
    ["route", "format", "model", "channel", "status_class"],
    counter("sluice_http_requests_total", "Requests answered, by route, inbound format, model, channel, status class")
  )
  readonly #firstByte = new Series(
    ["route", "channel"],
    histogram("sluice_http_time_to_first_byte_seconds", "Seconds until the answer's head was sent")
  )
  readonly #duration = new Series(
    ["route", "channel"],
    histogram("sluice_http_request_duration_seconds", "Seconds until the answer's last byte (or its cut)")
  )
  readonly #attempts = new Series(
    ["channel", "outcome"],
    counter("sluice_upstream_attempts_total", "Upstream attempts, by channel and outcome (ok or the failure kind)")
  )
  readonly #failovers = new Series(
    ["channel", "reason"],
    counter("sluice_failovers_total", "Retryable attempt failures that move a request on to its next candidate")
  )
  readonly #tokens = new Series(
    ["model", "kind"],
    counter("sluice_tokens_total", "Billed tokens, by model and kind (prompt, completion, cached, reasoning)")
  )
  readonly #charged = new Series(
    ["model", "group"],
    (attributes) =>
      Metric.counter("sluice_quota_charged_total", {
        description: "Quota charged, in quota units (micro-USD), by model and group",
        attributes,
        bigint: true,
        incremental: true
      })
  )
  readonly #storageErrors = new Series(
    ["operation"],
    counter(
      "sluice_storage_errors_total",
      "Requests answered 503 storage_unavailable, by the store operation that failed"
    )
  )
  readonly #rateLimited = counter("sluice_rate_limit_rejections_total", "Requests refused by a rate limit (429)")({})
  readonly #keyDisables = new Series(
    ["channel"],
    counter("sluice_key_disables_total", "Channel keys disabled after the upstream refused them")
  )
  readonly #cooldowns = new Series(["channel"], counter("sluice_channel_cooldowns_total", "Channel cooldowns started"))
  readonly #channelUp = new Series(
    ["channel"],
    (attributes) =>
      Metric.gauge("sluice_channel_up", {
        description: "1 while a channel is healthy, 0 while it cools down or has no enabled key",
        attributes
      })
  )
  readonly #channelKeys = new Series(
    ["channel"],
    (attributes) =>
      Metric.gauge("sluice_channel_enabled_keys", { description: "Enabled keys of a channel", attributes })
  )

  readonly #socketFrames = new Series(
    ["route", "direction"],
    counter(
      "sluice_websocket_frames_total",
      "WebSocket frames, by route and direction (in: from the caller, out: to it)"
    )
  )
  readonly #socketBytes = new Series(
    ["route", "direction"],
    counter("sluice_websocket_bytes_total", "WebSocket payload bytes, by route and direction")
  )

  constructor() {
    this.context = Context.make(Metric.MetricRegistry, new Map())
  }

  /**
   * Counts a finished request and observes its latencies: seconds until the answer's head was handed to the
   * server, and until the request ended (a stream: its last byte, or its cut).
   */
  request(
    route: string,
    format: string,
    modelLabel: string,
    channel: string,
    status: number,
    firstByteSeconds: number,
    totalSeconds: number
  ): void {
    const context = this.context
    add(this.#requests.at(route, format, modelLabel, channel, statusClass(status)), 1, context)
    add(this.#firstByte.at(route, channel), firstByteSeconds, context)
    add(this.#duration.at(route, channel), totalSeconds, context)
  }

  /** Counts an upstream attempt: `ok`, or the failure's kind (bounded: `UpstreamFailed["kind"]`). */
  attempt(channel: string, outcome: string): void {
    add(this.#attempts.at(channel, outcome), 1, this.context)
  }

  /** Counts a retryable failure that moves the request on. */
  failover(channel: string, reason: string): void {
    add(this.#failovers.at(channel, reason), 1, this.context)
  }

  /** Counts the billed usage and the quota charged (equal to what the ledger booked). */
  usage(
    model: string,
    group: string,
    prompt: number,
    completion: number,
    cached: number,
    reasoning: number,
    charged: bigint
  ): void {
    const context = this.context
    add(this.#tokens.at(model, "prompt"), prompt, context)
    add(this.#tokens.at(model, "completion"), completion, context)
    add(this.#tokens.at(model, "cached"), cached, context)
    add(this.#tokens.at(model, "reasoning"), reasoning, context)
    add(this.#charged.at(model, group), charged, context)
  }

  /** Counts one WebSocket frame of `bytes` payload bytes on `route` (`in`: from the caller; `out`: to it). */
  websocketFrame(route: string, direction: "in" | "out", bytes: number): void {
    add(this.#socketFrames.at(route, direction), 1, this.context)
    add(this.#socketBytes.at(route, direction), bytes, this.context)
  }

  /** Counts a request refused by a rate limit. */
  rateLimited(): void {
    add(this.#rateLimited, 1, this.context)
  }

  /**
   * Counts a request answered `storage_unavailable` (503): `operation` is the
   * fixed name of the store operation that failed (`StorageUnavailable`).
   */
  storageError(operation: string): void {
    add(this.#storageErrors.at(operation), 1, this.context)
  }

  /** Counts a key disabled on `channel`. */
  keyDisabled(channel: string): void {
    add(this.#keyDisables.at(channel), 1, this.context)
  }

  /** Counts a cooldown started on `channel`. */
  cooldown(channel: string): void {
    add(this.#cooldowns.at(channel), 1, this.context)
  }

  /** Sets the health gauges of `channel` (read from the router when scraped). */
  channelHealth(channel: string, up: boolean, enabledKeys: number): void {
    add(this.#channelUp.at(channel), up ? 1 : 0, this.context)
    add(this.#channelKeys.at(channel), enabledKeys, this.context)
  }

  /**
   * Registers a gauge read when metrics are scraped (`name` with no labels);
   * the returned function unregisters it (call it when the source closes).
   */
  pull(name: string, description: string, get: () => number): () => void {
    const registration = Metric.registerUnsafe(Metric.gauge(name, { description }), this.context, {
      get: () => ({ value: get() }),
      update: () => {},
      modify: () => {}
    })
    return registration.remove
  }

  /**
   * Registers a gauge with labels (`attributes`) read when metrics are
   * scraped; the returned function unregisters it, so a source can keep its
   * series bounded (the budget utilisation's top N).
   */
  pullLabelled(name: string, description: string, attributes: Record<string, string>, get: () => number): () => void {
    const registration = Metric.registerUnsafe(Metric.gauge(name, { description, attributes }), this.context, {
      get: () => ({ value: get() }),
      update: () => {},
      modify: () => {}
    })
    return registration.remove
  }
}

/**
 * The gateway's metrics, or `undefined` when they are off (`SLUICE_METRICS=off`,
 * or a service built without the app, as in unit tests). Services read it once
 * when their layer is built.
 *
 * @category services
 */
export const CurrentMetrics = Context.Reference<Metrics | undefined>("sluice/observability/CurrentMetrics", {
  defaultValue: () => undefined
})
