/**
 * The traffic of the crash billing tests (`test/integration/CrashBilling*.test.ts`): seeded requests in the five
 * text formats, sent and read the way the SDKs read them (a streamed answer up to its format's end marker, then
 * the connection dropped; some callers leave mid-answer), and the check of the usage log against what the
 * emulator reported for each answer (never against the ledger alone).
 */
import type { RecordedRequest } from "../../emulator/Emulator.ts"
import type { Row } from "./Store.ts"

/** The inbound text formats. */
export const FORMATS = ["chat", "responses", "messages", "gemini", "completions"] as const
export type Inbound = typeof FORMATS[number]

/** A small seeded generator (mulberry32), so a failing run can be replayed. */
export const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const WORDS = ["river", "stone", "delta", "harbour", "current", "estuary", "tide", "bank", "reed", "heron"]

/** A prompt of 6 to 23 words drawn by `next`. */
export const promptOf = (next: () => number): string =>
  Array.from({ length: 6 + Math.floor(next() * 18) }, () => WORDS[Math.floor(next() * WORDS.length)]).join(" ")

/** The gateway key and output cap every request of a test uses. */
export interface Caller {
  readonly key: string
  readonly maxTokens: number
}

/** The request of one plan: path, headers and body in the inbound format's own terms. */
const requestOf = (caller: Caller, inbound: Inbound, model: string, stream: boolean, text: string) => {
  const json = { "content-type": "application/json" }
  const { key, maxTokens } = caller
  switch (inbound) {
    case "chat":
      return {
        path: "/v1/chat/completions",
        headers: { ...json, authorization: `Bearer ${key}` },
        body: { model, stream, max_tokens: maxTokens, messages: [{ role: "user", content: text }] },
        end: "[DONE]"
      }
    case "completions":
      return {
        path: "/v1/completions",
        headers: { ...json, authorization: `Bearer ${key}` },
        body: { model, stream, max_tokens: maxTokens, prompt: text },
        end: "[DONE]"
      }
    case "responses":
      return {
        path: "/v1/responses",
        headers: { ...json, authorization: `Bearer ${key}` },
        body: { model, stream, max_output_tokens: maxTokens, input: text },
        end: "response.completed"
      }
    case "messages":
      return {
        path: "/v1/messages",
        headers: { ...json, "x-api-key": key, "anthropic-version": "2023-06-01" },
        body: { model, stream, max_tokens: maxTokens, messages: [{ role: "user", content: text }] },
        end: "message_stop"
      }
    case "gemini":
      return {
        path: stream
          ? `/v1beta/models/${model}:streamGenerateContent?alt=sse`
          : `/v1beta/models/${model}:generateContent`,
        headers: { ...json, "x-goog-api-key": key },
        body: { contents: [{ role: "user", parts: [{ text }] }], generationConfig: { maxOutputTokens: maxTokens } },
        // No end marker: the SDK reads to the end of the body.
        end: undefined
      }
  }
}

/** How one request ended for its caller. */
export interface Outcome {
  readonly upstream: string
  /** The gateway's `x-request-id` (the usage log's request id), when an answer began. */
  readonly requestId: string | undefined
  readonly kind: "full" | "cut" | "failed"
}

/**
 * Sends one request for model `m-<upstream>` and reads it as an SDK does (or leaves after two chunks when
 * `leave`); never throws.
 */
export const send = async (
  base: string,
  caller: Caller,
  plan: {
    readonly inbound: Inbound
    readonly upstream: string
    readonly stream: boolean
    readonly leave: boolean
    readonly text: string
  }
): Promise<Outcome> => {
  const { inbound, upstream, stream, leave, text } = plan
  const request = requestOf(caller, inbound, `m-${upstream}`, stream, text)
  try {
    const response = await fetch(`${base}${request.path}`, {
      method: "POST",
      headers: request.headers,
      body: JSON.stringify(request.body)
    })
    const requestId = response.headers.get("x-request-id") ?? undefined
    if (response.status !== 200) {
      await response.body?.cancel()
      return { upstream, requestId, kind: "failed" }
    }
    if (!stream) {
      JSON.parse(await response.text())
      return { upstream, requestId, kind: "full" }
    }
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let seen = ""
    let chunks = 0
    while (true) {
      const { done, value } = await reader.read()
      if (done) break
      seen += decoder.decode(value, { stream: true })
      chunks += 1
      if (leave && chunks >= 2) {
        await reader.cancel()
        return { upstream, requestId, kind: "cut" }
      }
      if (request.end !== undefined && seen.includes(request.end)) {
        // As the SDKs do: the end marker read, the connection dropped.
        await reader.cancel()
        return { upstream, requestId, kind: "full" }
      }
    }
    const full = request.end === undefined ? seen.includes("finishReason") : false
    return { upstream, requestId, kind: full ? "full" : "failed" }
  } catch {
    return { upstream, requestId: undefined, kind: "failed" }
  }
}

/** What the emulator reported for each answer, by the gateway's request id: prompt and completion tokens. */
export const reportedUsage = (
  requests: ReadonlyArray<RecordedRequest>
): Map<string, { readonly prompt: number; readonly completion: number }> => {
  const reported = new Map<string, { prompt: number; completion: number }>()
  for (const request of requests) {
    const id = request.headers["x-request-id"]
    if (id === undefined || request.usage === undefined) continue
    const anthropic = !request.path.includes(":") && request.headers["anthropic-version"] !== undefined
    const usage = request.usage
    // The gateway bills Anthropic's cache reads and writes as prompt tokens.
    const prompt = usage.input + (anthropic ? usage.cacheRead + usage.cacheWrite : 0)
    reported.set(id, { prompt, completion: usage.output })
  }
  return reported
}

/** The SQL of the rows `checkBilling` reads: every accepted upstream attempt. */
export const BILLED_ROWS_SQL = `SELECT request_id, prompt_tokens, completion_tokens, cost::text AS cost
  FROM usage_logs WHERE status < 400 AND attempt > 0`

/** What `checkBilling` found wrong; every list empty when the bill is right. */
export interface BillingCheck {
  readonly full: number
  readonly cut: number
  /** Answers delivered in full billed other tokens or another cost than the emulator reported. */
  readonly mismatched: ReadonlyArray<string>
  /** Answers delivered in full with no usage row, or several (billed twice). */
  readonly missing: ReadonlyArray<string>
  /** Rows of answers cut by their callers billed more output than the cap. */
  readonly overCap: number
}

/**
 * Checks the accepted usage rows (`BILLED_ROWS_SQL`) against the emulator's report for every outcome: an answer
 * delivered in full has exactly one row with the vendor's tokens and the cost `prompt × input + completion ×
 * output`; a cut one is billed no more output than `maxTokens`.
 */
export const checkBilling = (options: {
  readonly outcomes: ReadonlyArray<Outcome>
  readonly rows: ReadonlyArray<Row>
  readonly reported: ReadonlyMap<string, { readonly prompt: number; readonly completion: number }>
  readonly price: { readonly input: number; readonly output: number }
  readonly maxTokens: number
}): BillingCheck => {
  const { outcomes, rows, reported, price, maxTokens } = options
  const billedOf = new Map<string, Array<Row>>()
  for (const row of rows) {
    billedOf.set(String(row.request_id), [...(billedOf.get(String(row.request_id)) ?? []), row])
  }
  const full = outcomes.filter((outcome) => outcome.kind === "full" && outcome.requestId !== undefined)
  const cut = outcomes.filter((outcome) => outcome.kind === "cut" && outcome.requestId !== undefined)
  const mismatched: Array<string> = []
  const missing: Array<string> = []
  for (const outcome of full) {
    const billed = billedOf.get(outcome.requestId!) ?? []
    const vendor = reported.get(outcome.requestId!)
    if (billed.length !== 1) {
      missing.push(`${outcome.requestId} (${billed.length} rows)`)
      continue
    }
    const [row] = billed
    const got = { prompt: Number(row.prompt_tokens), completion: Number(row.completion_tokens) }
    if (
      vendor === undefined || got.prompt !== vendor.prompt || got.completion !== vendor.completion ||
      Number(row.cost) !== vendor.prompt * price.input + vendor.completion * price.output
    ) mismatched.push(`${outcome.upstream} ${JSON.stringify(got)} vs ${JSON.stringify(vendor)}`)
  }
  const overCap =
    cut.flatMap((outcome) =>
      (billedOf.get(outcome.requestId!) ?? []).filter((row) => Number(row.completion_tokens) > maxTokens)
    ).length
  return { full: full.length, cut: cut.length, mismatched, missing, overCap }
}
