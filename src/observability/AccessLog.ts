/**
 * The access log: one line per request on stdout, in the log's one shape
 * (`LogLine.ts`: `time`, `level`, `msg` (`"request"`), then the fields) as
 * JSON or, when stdout is a terminal, in the readable form. A line holds the
 * time, level, request id, method, route (its pattern, never the caller's
 * path), status, latencies, inbound format, model, group, channel, tokens,
 * cost and the failover path; never a key, a body or the caller's path. The
 * model a caller named is logged with key-like text masked and bounded to
 * 100 characters; the route is a pattern and every other field is the
 * gateway's own value.
 *
 * Lines are only formatted when their level passes `LOG_LEVEL` (4xx answers
 * are `warn`, 5xx `error`, the rest `info`), and they are written in batches
 * (`LineSink`), not one system call per request.
 *
 * @since 0.1.0
 */
import type { LogLevelName } from "../config/ObservabilityEnv.ts"
import { safeVendorText } from "../domain/Redact.ts"
import { lineText } from "./LogLine.ts"
import type { RequestRecord } from "./RequestRecord.ts"
import { routeOf } from "./RouteLabel.ts"

/** Numeric rank of a level (higher is more severe). @category levels */
export const levelRank: Readonly<Record<LogLevelName, number>> = { debug: 0, info: 1, warn: 2, error: 3 }

/** The level of a request's line: `error` for 5xx, `warn` for 4xx, `info` otherwise. @category levels */
export const levelOf = (status: number): LogLevelName => status >= 500 ? "error" : status >= 400 ? "warn" : "info"

const round = (milliseconds: number): number => Math.round(milliseconds * 100) / 100

/** The model as logged: a priced model's name, or the caller's text masked and bounded. */
const modelOf = (record: RequestRecord): string | null =>
  record.model === undefined
    ? null
    : record.modelLabel === record.model
    ? record.model
    : safeVendorText(record.model, 100)

/** The fields of a record's line, in order (`route`: its label, when already known). @category formatting */
export const fieldsOf = (record: RequestRecord, route: string = routeOf(record.url)) => ({
  time: new Date(record.startedAt).toISOString(),
  level: levelOf(record.status),
  msg: "request",
  request_id: record.requestId,
  method: record.method,
  route,
  status: record.status,
  latency_ms: round(record.totalMs),
  ttfb_ms: round(record.firstByteMs),
  format: record.format,
  model: modelOf(record),
  group: record.group ?? null,
  channel: record.channel ?? null,
  prompt_tokens: record.promptTokens,
  completion_tokens: record.completionTokens,
  cached_tokens: record.cachedTokens,
  reasoning_tokens: record.reasoningTokens,
  cost: Number(record.cost),
  failover: record.path ?? []
})

/** A string field as JSON, or `null`. */
const jsonText = (value: string | null | undefined): string => value == null ? "null" : JSON.stringify(value)

/** A number field as JSON (`null` for a value JSON has no number for). */
const jsonNumber = (value: number): string => Number.isFinite(value) ? String(value) : "null"

let lastTimeMillis = Number.NaN
let lastTime = ""

/** `new Date(millis).toISOString()`, kept for the last millisecond asked (several requests start in each). */
const isoTime = (millis: number): string => {
  if (millis !== lastTimeMillis) {
    lastTimeMillis = millis
    lastTime = new Date(millis).toISOString()
  }
  return lastTime
}

/**
 * A record as one JSON line (no newline): the text `JSON.stringify(fieldsOf(record, route))` gives, written
 * field by field without the intermediate object (the line is made for every request).
 *
 * @category formatting
 */
export const jsonLine = (record: RequestRecord, route: string = routeOf(record.url)): string =>
  `{"time":"${isoTime(record.startedAt)}","level":"${levelOf(record.status)}","msg":"request","request_id":${
    jsonText(record.requestId)
  },"method":${jsonText(record.method)},"route":${jsonText(route)},"status":${jsonNumber(record.status)},"latency_ms":${
    jsonNumber(round(record.totalMs))
  },"ttfb_ms":${jsonNumber(round(record.firstByteMs))},"format":${jsonText(record.format)},"model":${
    jsonText(modelOf(record))
  },"group":${jsonText(record.group)},"channel":${jsonText(record.channel)},"prompt_tokens":${
    jsonNumber(record.promptTokens)
  },"completion_tokens":${jsonNumber(record.completionTokens)},"cached_tokens":${
    jsonNumber(record.cachedTokens)
  },"reasoning_tokens":${jsonNumber(record.reasoningTokens)},"cost":${jsonNumber(Number(record.cost))},"failover":${
    record.path === undefined ? "[]" : JSON.stringify(record.path)
  }}`

/**
 * A record as one readable line (no newline): its fields in the log's text
 * form (`LogLine.ts` `lineText`), e.g. `2026-11-25T15:00:00.000Z INFO  request request_id=… method=POST
 * route=/v1/chat/completions status=200 latency_ms=12.3 ttfb_ms=3.1 format=openai-chat model=gpt-4o
 * channel=openai-main prompt_tokens=10 completion_tokens=20 … cost=123 failover=["a:server","b:ok"]`.
 *
 * @category formatting
 */
export const textLine = (record: RequestRecord, route?: string): string => lineText(fieldsOf(record, route))

/**
 * Lines written in batches: collected, and written as one chunk at most every
 * `intervalMillis` (or at once past 64 KiB); `flush` writes what is left
 * (call it when the gateway stops).
 *
 * @category sinks
 */
export class LineSink {
  readonly #write: (bytes: Uint8Array) => void
  readonly #intervalMillis: number
  readonly #encoder = new TextEncoder()
  #lines: Array<string> = []
  #size = 0
  #timer: ReturnType<typeof setTimeout> | undefined = undefined

  constructor(write: (bytes: Uint8Array) => void, intervalMillis = 100) {
    this.#write = write
    this.#intervalMillis = intervalMillis
  }

  /** Queues `line` (no newline). */
  line(line: string): void {
    this.#lines.push(line)
    this.#size += line.length
    if (this.#size > 65_536) this.flush()
    else if (this.#timer === undefined) {
      const timer = setTimeout(() => this.flush(), this.#intervalMillis)
      Deno.unrefTimer(timer)
      this.#timer = timer
    }
  }

  /** Writes every queued line now. */
  flush(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer)
      this.#timer = undefined
    }
    if (this.#lines.length === 0) return
    const text = this.#lines.join("\n") + "\n"
    this.#lines = []
    this.#size = 0
    try {
      this.#write(this.#encoder.encode(text))
    } catch {
      // stdout closed (a pipe whose reader left): the log is lost, the gateway goes on.
    }
  }
}

/**
 * A sink on the process's stdout (`Deno.stdout.writeSync`, looping over partial writes).
 *
 * @category sinks
 */
export const stdoutSink = (): LineSink =>
  new LineSink((bytes) => {
    let offset = 0
    while (offset < bytes.length) offset += Deno.stdout.writeSync(bytes.subarray(offset))
  })
