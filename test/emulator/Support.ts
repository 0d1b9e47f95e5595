/**
 * Test helpers for the vendor emulator: start one, run a body, always close it.
 */
import { type Emulator, type EmulatorOptions, startEmulator } from "../../emulator/Emulator.ts"

/** Runs `body` against a fresh emulator and closes it afterwards (so Deno's sanitizers pass). */
export const withEmulator = async (
  options: EmulatorOptions,
  body: (emulator: Emulator) => Promise<void>
): Promise<void> => {
  const emulator = startEmulator(options)
  try {
    await body(emulator)
  } finally {
    await emulator.close()
  }
}

/** Reads a whole SSE body into `{event, data}` frames (data parsed as JSON when possible). */
export const readSse = async (response: Response): Promise<ReadonlyArray<{ event: string; data: unknown }>> => {
  const text = await response.text()
  return text.split(/\r?\n\r?\n/).filter((frame) => frame.trim().length > 0).map((frame) => {
    let event = "message"
    const data: Array<string> = []
    for (const line of frame.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim()
      else if (line.startsWith("data:")) data.push(line.slice(5).trimStart())
    }
    const joined = data.join("\n")
    try {
      return { event, data: JSON.parse(joined) }
    } catch {
      return { event, data: joined }
    }
  })
}

/** A 1×1 PNG as base64, for image inputs. */
export const pixelPng =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

/** A weather tool schema used across vendor tests. */
export const weatherSchema = {
  type: "object" as const,
  properties: {
    location: { type: "string" },
    unit: { type: "string", enum: ["celsius", "fahrenheit"] },
    days: { type: "integer" },
    detailed: { type: "boolean" }
  },
  required: ["location", "unit"]
}
