/**
 * The environment settings of operating Sluice (docs/OPERATING.md):
 * `LOG_FORMAT` (`json`, `text`, or unset: `text` when stdout is a terminal,
 * else `json`), `LOG_LEVEL` (`debug`, `info` (default), `warn`, `error`),
 * `SLUICE_ACCESS_LOG` and `SLUICE_METRICS` (`off` turns the access log or the
 * metrics off, e.g. to measure their cost), and the OpenTelemetry exporter's
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (base URL; traces go to `…/v1/traces`, logs to
 * `…/v1/logs`) and `OTEL_SERVICE_NAME` (default `sluice`).
 *
 * @since 0.1.0
 */
import { Config, Option } from "effect"

/** The levels `LOG_LEVEL` takes, lowest first. @category models */
export type LogLevelName = "debug" | "info" | "warn" | "error"

/** @category models */
export interface ObservabilityEnv {
  /** `undefined`: decided from whether stdout is a terminal. */
  readonly logFormat: "json" | "text" | undefined
  readonly logLevel: LogLevelName
  readonly accessLog: boolean
  readonly metrics: boolean
  /** Base URL of an OTLP/HTTP collector, e.g. `http://collector:4318`; `undefined`: no export. */
  readonly otlpEndpoint: string | undefined
  readonly serviceName: string
}

const optionalString = (name: string) =>
  Config.option(Config.String(name)).pipe(Config.map((value) => Option.getOrUndefined(value) || undefined))

const onOff = (name: string) =>
  Config.Literals(["on", "off"], name).pipe(Config.withDefault("on"), Config.map((value) => value === "on"))

/**
 * Reads `ObservabilityEnv` from the process environment; a value outside the
 * listed ones fails with the variable's name.
 *
 * @category config
 */
export const ObservabilityEnvConfig: Config.Config<ObservabilityEnv> = Config.all({
  logFormat: Config.Literals(["json", "text"], "LOG_FORMAT").pipe(
    Config.option,
    Config.map(Option.getOrUndefined)
  ),
  logLevel: Config.Literals(["debug", "info", "warn", "error"], "LOG_LEVEL").pipe(Config.withDefault("info")),
  accessLog: onOff("SLUICE_ACCESS_LOG"),
  metrics: onOff("SLUICE_METRICS"),
  otlpEndpoint: optionalString("OTEL_EXPORTER_OTLP_ENDPOINT"),
  serviceName: Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault("sluice"))
})
