/**
 * Starts the vendor emulator as its own process, for a gateway demo or benchmark.
 * Environment: `EMULATOR_PORT` (default 4010), `EMULATOR_LATENCY_MS` (default 0),
 * `EMULATOR_TOKENS_PER_SECOND` (default 0 = unpaced), `EMULATOR_RECORD` (`false` to keep no requests),
 * `EMULATOR_VIDEO_STEP_MS` (milliseconds per video task phase step, default 1000), `EMULATOR_TOOL_CALLS`
 * (`automatic`, the default, or `asked`: when a request offering tools gets a tool call, see `Answer.ts`).
 * Run with `deno task emulator`.
 *
 * @since 0.1.0
 */
import { startEmulator, type ToolCallMode } from "./Emulator.ts"

const numberFromEnv = (name: string, fallback: number): number => {
  const raw = Deno.env.get(name)
  const value = raw === undefined || raw === "" ? fallback : Number(raw)
  if (!Number.isFinite(value) || value < 0) throw new Error(`Could not read ${name}: "${raw}" is not a number >= 0.`)
  return value
}

const toolCallsFromEnv = (): ToolCallMode => {
  const raw = Deno.env.get("EMULATOR_TOOL_CALLS")
  if (raw === undefined || raw === "" || raw === "automatic") return "automatic"
  if (raw === "asked") return raw
  throw new Error(`Could not read EMULATOR_TOOL_CALLS: "${raw}" is neither "automatic" nor "asked".`)
}

const emulator = startEmulator({
  port: numberFromEnv("EMULATOR_PORT", 4010),
  latencyMs: numberFromEnv("EMULATOR_LATENCY_MS", 0),
  tokensPerSecond: numberFromEnv("EMULATOR_TOKENS_PER_SECOND", 0),
  record: Deno.env.get("EMULATOR_RECORD") !== "false",
  videoStepMs: numberFromEnv("EMULATOR_VIDEO_STEP_MS", 1000),
  toolCalls: toolCallsFromEnv()
})

// deno-lint-ignore no-console
console.log(`Vendor emulator listening on ${emulator.url}`)

Deno.addSignalListener("SIGINT", () => {
  emulator.close().then(() => Deno.exit(0))
})
