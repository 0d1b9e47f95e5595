/**
 * The gateway's telemetry: the request-id and access-log middleware, the
 * metrics of finished requests, and Effect's own log lines sent to the same
 * place as the access log in the same shape (`LogLine.ts`), filtered by
 * `LOG_LEVEL`.
 *
 * `x-request-id`: a caller's value is taken when well-formed (1 to 128 of
 * `A-Z a-z 0-9 . _ : + / = -`), otherwise one is made (32 hex digits, then
 * also the usage log's `request_id`); it is returned on every answer and sent
 * upstream with every attempt.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Logger, References } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { LogLevelName } from "../config/ObservabilityEnv.ts"
import { headerOf } from "../http/Credentials.ts"
import { hasMadeRequestId } from "../http/MadeRequestId.ts"
import { jsonLine, levelOf, levelRank, textLine } from "./AccessLog.ts"
import { formatLine, lineLogger, type LogLine } from "./LogLine.ts"
import { Metrics } from "./Metrics.ts"
import { attachRecord, type RecordOwner, RequestRecord } from "./RequestRecord.ts"
import { routeOf } from "./RouteLabel.ts"

/** How the telemetry behaves. @category models */
export interface TelemetryOptions {
  /** Record metrics (`SLUICE_METRICS`). */
  readonly metrics: boolean
  /** Write an access-log line per request (`SLUICE_ACCESS_LOG`). */
  readonly accessLog: boolean
  /** `LOG_FORMAT`: every line as JSON or in the readable text form (`LogLine.ts`). */
  readonly format: "json" | "text"
  /** `LOG_LEVEL`: the least level written. */
  readonly level: LogLevelName
  /** Where log lines go (no newline); the gateway's is a batched stdout writer. */
  readonly sink: (line: string) => void
}

const WELL_FORMED_ID = /^[A-Za-z0-9._:+/=-]{1,128}$/

/**
 * The request id to use for a request sent with `header`: the caller's when
 * well-formed, else `undefined` (one is made).
 *
 * @category request id
 */
export const callerRequestId = (header: string | undefined): string | undefined =>
  header !== undefined && WELL_FORMED_ID.test(header) ? header : undefined

/** A made request id: 32 lowercase hex digits. @category request id */
export const makeRequestId = (): string => crypto.randomUUID().replaceAll("-", "")

const effectLevels: Readonly<Record<LogLevelName, "Debug" | "Info" | "Warn" | "Error">> = {
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  error: "Error"
}

/** One gateway's telemetry. @category models */
export class Telemetry implements RecordOwner {
  /** The metrics, or `undefined` when they are off. */
  readonly metrics: Metrics | undefined
  readonly options: TelemetryOptions
  readonly #logRank: number
  readonly #levelRank: number

  constructor(options: TelemetryOptions) {
    this.options = options
    this.metrics = options.metrics ? new Metrics() : undefined
    this.#levelRank = levelRank[options.level]
    this.#logRank = options.accessLog ? this.#levelRank : Number.POSITIVE_INFINITY
  }

  /**
   * Writes `line` in the telemetry's format to its sink when its level passes
   * `LOG_LEVEL` (a WebSocket's end line is written this way).
   */
  readonly write = (line: LogLine): void => {
    if (levelRank[line.level] >= this.#levelRank) this.options.sink(formatLine(line, this.options.format))
  }

  /** A record for a request arriving at `startedAt` (epoch milliseconds). */
  open(request: HttpServerRequest.HttpServerRequest, startedAt: number): RequestRecord {
    const given = callerRequestId(headerOf(request, "x-request-id"))
    return new RequestRecord(
      this,
      given ?? makeRequestId(),
      // A request the gateway made itself (a socket's response) carries an id the gateway chose.
      given === undefined || hasMadeRequestId(request),
      request.method,
      request.url,
      startedAt
    )
  }

  attempt(channel: string, outcome: string, failover: boolean): void {
    const metrics = this.metrics
    if (metrics === undefined) return
    metrics.attempt(channel, outcome)
    if (failover) metrics.failover(channel, outcome)
  }

  finished(record: RequestRecord): void {
    const route = routeOf(record.url)
    const metrics = this.metrics
    if (metrics !== undefined) {
      const channel = record.channel ?? "none"
      metrics.request(
        route,
        record.format,
        record.modelLabel,
        channel,
        record.status,
        record.firstByteMs / 1000,
        record.totalMs / 1000
      )
      if (record.group !== undefined && (record.promptTokens + record.completionTokens > 0 || record.cost > 0n)) {
        metrics.usage(
          record.modelLabel,
          record.group,
          record.promptTokens,
          record.completionTokens,
          record.cachedTokens,
          record.reasoningTokens,
          record.cost
        )
      }
    }
    if (levelRank[levelOf(record.status)] >= this.#logRank) {
      this.options.sink(this.options.format === "json" ? jsonLine(record, route) : textLine(record, route))
    }
  }

  /**
   * The middleware of every request (a global router middleware): makes the
   * request's record, attaches it to the request (what `CurrentRequest` reads),
   * annotates the request's log lines with its `request_id`, and returns the
   * answer with `x-request-id`.
   */
  get middlewareLayer(): Layer.Layer<never, never, HttpRouter.HttpRouter> {
    return HttpRouter.middleware(
      (app) =>
        // One step reads both the request and the time it arrived (by the fiber's `Clock`).
        Effect.withFiber((fiber) => {
          const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
          const record = this.open(request, fiber.getRef(Clock.Clock).currentTimeMillisUnsafe())
          attachRecord(request, record)
          // Every log line of the request's fiber (and the fibers it forks) names the request, as its access line does.
          return Effect.matchCauseEffect(Effect.annotateLogs(app, "request_id", record.requestId), {
            onSuccess: (response) => {
              // A WebSocket handshake's route answers a 204 placeholder the server turns into the 101
              // (`http/WebSocketHandshake.ts`): the access line tells what the caller got.
              record.responded(
                response.status === 204 && (request.headers["upgrade"] ?? "").toLowerCase() === "websocket"
                  ? 101
                  : response.status
              )
              return Effect.succeed(HttpServerResponse.setHeader(response, "x-request-id", record.requestId))
            },
            onFailure: (cause) => {
              record.responded(500)
              return Effect.failCause(cause)
            }
          })
        }),
      { global: true }
    )
  }

  /**
   * Effect's log lines (the services' warnings and errors) to the same sink
   * as the access log, in the same shape and format (`LogLine.ts`
   * `lineLogger`), from `LOG_LEVEL` up.
   */
  get loggerLayer(): Layer.Layer<never> {
    return Layer.merge(
      Logger.layer([lineLogger(this.options.format, this.options.sink)]),
      Layer.succeed(References.MinimumLogLevel, effectLevels[this.options.level])
    )
  }
}
