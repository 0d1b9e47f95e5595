/**
 * Every in-process test gateway logs (its access log and Effect's log lines)
 * into memory, and `assertNoSecrets` checks that output when the gateway
 * stops: no key of the bootstrap file (channel keys, callers' keys,
 * passwords, the status and metrics tokens) and no prompt text (every string
 * of 16 characters or more in the bodies the emulator received, model names
 * aside) may appear in any line. So every integration test that starts a
 * gateway through `startGateway` or `startStoredGateway` is also a scan of its
 * log output.
 */
import type { BootstrapFile } from "../../src/config/BootstrapFile.ts"
import type { RecordedRequest } from "../../emulator/Emulator.ts"
import type { TelemetryOptions } from "../../src/observability/Telemetry.ts"

/** Telemetry that keeps every line (JSON, from `debug` up) in `lines`. */
export const collectingTelemetry = (): { readonly options: TelemetryOptions; readonly lines: Array<string> } => {
  const lines: Array<string> = []
  return {
    lines,
    options: { metrics: true, accessLog: true, format: "json", level: "debug", sink: (line) => lines.push(line) }
  }
}

/** The secrets of a bootstrap file. */
export const secretsOf = (file: BootstrapFile): ReadonlyArray<string> => [
  // A kling key is `accessKey|secretKey`: the secret key alone must not appear either; nor the token of an azure
  // `entra:<token>` key.
  ...(file.channels ?? []).flatMap((channel) =>
    channel.type === "kling"
      ? channel.keys.flatMap((key) => [key, ...key.split("|").slice(1)])
      : channel.type === "azure"
      ? channel.keys.flatMap((key) => key.startsWith("entra:") ? [key, key.slice("entra:".length)] : [key])
      : channel.keys
  ),
  ...(file.users ?? []).flatMap((user) => [
    ...(user.password === undefined ? [] : [user.password]),
    ...(user.tokens ?? []).map((token) => token.key)
  ]),
  ...(file.settings?.status_token === undefined ? [] : [file.settings.status_token]),
  ...(file.settings?.metrics_token === undefined ? [] : [file.settings.metrics_token])
]

/** Strings of 16 characters or more in a body, but for model names and a vendor batch's `endpoint` (a route path). */
const longStrings = (value: unknown, into: Set<string>, key = ""): void => {
  if (typeof value === "string") {
    if (value.length >= 16 && key !== "model" && key !== "endpoint") into.add(value)
  } else if (Array.isArray(value)) {
    for (const item of value) longStrings(item, into, key)
  } else if (typeof value === "object" && value !== null) {
    for (const [name, item] of Object.entries(value)) longStrings(item, into, name)
  }
}

/** The prompt texts (and other long strings) the emulator received. */
export const promptsOf = (requests: ReadonlyArray<RecordedRequest>): ReadonlyArray<string> => {
  const found = new Set<string>()
  for (const request of requests) longStrings(request.body, found)
  return [...found]
}

/** Throws naming the first line that holds a secret or a prompt. */
export const assertNoSecrets = (
  lines: ReadonlyArray<string>,
  secrets: ReadonlyArray<string>,
  prompts: ReadonlyArray<string>
): void => {
  for (const line of lines) {
    for (const secret of secrets) {
      if (line.includes(secret)) throw new Error(`A log line holds a key: ${line.slice(0, 300)}`)
    }
    for (const prompt of prompts) {
      if (line.includes(prompt)) throw new Error(`A log line holds prompt text: ${line.slice(0, 300)}`)
    }
  }
}
