/**
 * The telemetry's settings and switches, with plain values: the environment
 * variables (`LOG_FORMAT`, `LOG_LEVEL`, `SLUICE_ACCESS_LOG`, `SLUICE_METRICS`,
 * `OTEL_*`) and their defaults, a bad value named, `LOG_LEVEL` filtering
 * access-log lines by the answer's status, the access log and the metrics
 * turned off, and the request-id rule.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { ConfigProvider, Effect } from "effect"
import { ObservabilityEnvConfig } from "../../src/config/ObservabilityEnv.ts"
import { RequestRecord } from "../../src/observability/RequestRecord.ts"
import { callerRequestId, makeRequestId, Telemetry, type TelemetryOptions } from "../../src/observability/Telemetry.ts"

/** The settings read from `env`. */
const readEnv = (env: Record<string, string>) =>
  Effect.gen(function* () {
    return yield* ObservabilityEnvConfig
  }).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env))))

Deno.test("observability env: defaults, values, and a bad value named", async () => {
  const defaults = await Effect.runPromise(readEnv({}))
  deepStrictEqual(defaults, {
    logFormat: undefined,
    logLevel: "info",
    accessLog: true,
    metrics: true,
    otlpEndpoint: undefined,
    serviceName: "sluice"
  })
  const set = await Effect.runPromise(readEnv({
    LOG_FORMAT: "text",
    LOG_LEVEL: "warn",
    SLUICE_ACCESS_LOG: "off",
    SLUICE_METRICS: "off",
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
    OTEL_SERVICE_NAME: "gw"
  }))
  deepStrictEqual(set, {
    logFormat: "text",
    logLevel: "warn",
    accessLog: false,
    metrics: false,
    otlpEndpoint: "http://collector:4318",
    serviceName: "gw"
  })
  const bad = await Effect.runPromise(Effect.flip(readEnv({ LOG_LEVEL: "verbose" })))
  ok(String(bad).includes("LOG_LEVEL"), String(bad))
})

const telemetry = (overrides: Partial<TelemetryOptions>) => {
  const lines: Array<string> = []
  const options: TelemetryOptions = {
    metrics: true,
    accessLog: true,
    format: "json",
    level: "info",
    sink: (line) => lines.push(line),
    ...overrides
  }
  return { lines, telemetry: new Telemetry(options) }
}

const finish = (owner: Telemetry, status: number) => {
  const record = new RequestRecord(owner, makeRequestId(), true, "GET", "/healthz", Date.now())
  record.responded(status)
}

Deno.test("telemetry: LOG_LEVEL filters access-log lines by status; off writes none and records no metrics", () => {
  const warn = telemetry({ level: "warn" })
  for (const status of [200, 404, 503]) finish(warn.telemetry, status)
  deepStrictEqual(warn.lines.map((line) => JSON.parse(line).status), [404, 503])
  deepStrictEqual(warn.lines.map((line) => JSON.parse(line).level), ["warn", "error"])

  const off = telemetry({ accessLog: false, metrics: false })
  for (const status of [200, 500]) finish(off.telemetry, status)
  deepStrictEqual(off.lines, [])
  strictEqual(off.telemetry.metrics, undefined)

  const text = telemetry({ format: "text" })
  finish(text.telemetry, 200)
  ok(
    /^\d{4}-\d\d-\d\dT[^ ]+Z INFO {2}request request_id=[0-9a-f]{32} method=GET route=\/healthz status=200 /.test(
      text.lines[0]
    ),
    text.lines[0]
  )
})

Deno.test("request ids: a well-formed caller id is taken, anything else is replaced", () => {
  strictEqual(callerRequestId("req-123_abc.DEF:4/5+6="), "req-123_abc.DEF:4/5+6=")
  for (const bad of [undefined, "", "has space", "x".repeat(129), "nul\u0000", "é", "line\nbreak"]) {
    strictEqual(callerRequestId(bad), undefined, JSON.stringify(bad))
  }
  ok(/^[0-9a-f]{32}$/.test(makeRequestId()))
})
