/**
 * The batch wire shapes as plain values: Anthropic's create body checks and result lines, OpenAI's create body and
 * input-line validation (each bad line named by its number, hostile strings kept as JSON keeps them) and its output
 * lines.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Result } from "effect"
import {
  decodeMessageBatchCreate,
  encodeMessageBatch,
  encodeMessageBatchResult
} from "../../../src/formats/batches/AnthropicBatch.ts"
import {
  decodeBatchCreate,
  encodeBatchOutputLine,
  MAX_REPORTED_ERRORS,
  validateBatchInput
} from "../../../src/formats/batches/OpenAiBatch.ts"

const params = { model: "m", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }

Deno.test("Anthropic create body: each bad field is named; params are kept as sent", () => {
  const bad = (body: Record<string, unknown>) => {
    const decoded = decodeMessageBatchCreate(body)
    ok(Result.isFailure(decoded))
    return decoded.failure.param
  }
  strictEqual(bad({}), "requests")
  strictEqual(bad({ requests: "x" }), "requests")
  strictEqual(bad({ requests: [] }), "requests")
  strictEqual(bad({ requests: [7] }), "requests[0]")
  strictEqual(bad({ requests: [{ custom_id: "a\u0000", params }] }), "requests[0].custom_id")
  strictEqual(bad({ requests: [{ custom_id: "x".repeat(65), params }] }), "requests[0].custom_id")
  strictEqual(bad({ requests: [{ custom_id: "a", params }, { custom_id: "a", params }] }), "requests[1].custom_id")
  strictEqual(bad({ requests: [{ custom_id: "a", params: [] }] }), "requests[0].params")
  strictEqual(bad({ requests: [{ custom_id: "a", params: { ...params, stream: true } }] }), "requests[0].params.stream")
  const hostile = { ...params, messages: [{ role: "user", content: "\u0000\ud800" + "x".repeat(1 << 20) }] }
  const decoded = decodeMessageBatchCreate({ requests: [{ custom_id: "a-_1", params: hostile }] })
  ok(Result.isSuccess(decoded))
  strictEqual(decoded.success[0].params, hostile)
})

Deno.test("Anthropic MessageBatch and result lines", () => {
  const at = new Date("2026-01-01T00:00:00Z")
  const counts = { processing: 0, succeeded: 1, errored: 0, canceled: 0, expired: 0 }
  const facts = {
    id: "msgbatch_1",
    phase: "ended" as const,
    counts,
    createdAt: at,
    endedAt: at,
    expiresAt: at,
    cancelInitiatedAt: null,
    archivedAt: null,
    origin: "https://gw.example"
  }
  strictEqual(encodeMessageBatch(facts).results_url, "https://gw.example/v1/messages/batches/msgbatch_1/results")
  strictEqual(encodeMessageBatch({ ...facts, phase: "running" }).results_url, null)
  strictEqual(encodeMessageBatch({ ...facts, phase: "cancelling" }).processing_status, "canceling")
  const line = (state: "succeeded" | "errored" | "canceled" | "expired", statusCode: number | null, result: string) =>
    JSON.parse(encodeMessageBatchResult({ customId: "c", state, statusCode, result, requestId: "msgbatch_1.0" }))
  deepStrictEqual(line("succeeded", 200, '{"type":"message"}'), {
    custom_id: "c",
    result: { type: "succeeded", message: { type: "message" } }
  })
  deepStrictEqual(line("errored", 429, '{"error":{"message":"slow down","type":"x","code":"rate_limit"}}').result, {
    type: "errored",
    error: {
      type: "error",
      error: { type: "rate_limit_error", message: "slow down", code: "rate_limit" },
      request_id: "msgbatch_1.0"
    }
  })
  deepStrictEqual(line("canceled", null, "").result, { type: "canceled" })
  deepStrictEqual(line("expired", null, "").result, { type: "expired" })
})

Deno.test("OpenAI create body and input validation", () => {
  const ok1 = decodeBatchCreate({ input_file_id: "file-1", endpoint: "/v1/embeddings", completion_window: "24h" })
  ok(Result.isSuccess(ok1))
  for (
    const [body, param] of [
      [{ endpoint: "/v1/embeddings", completion_window: "24h" }, "input_file_id"],
      [{ input_file_id: "f", endpoint: "/v1/images/generations", completion_window: "24h" }, "endpoint"],
      [{ input_file_id: "f", endpoint: "/v1/embeddings", completion_window: "1h" }, "completion_window"],
      [{ input_file_id: "f", endpoint: "/v1/embeddings", completion_window: "24h", metadata: { a: 1 } }, "metadata"]
    ] as const
  ) {
    const decoded = decodeBatchCreate(body as Record<string, unknown>)
    ok(Result.isFailure(decoded))
    strictEqual(decoded.failure.param, param)
  }
  const line = (custom_id: unknown, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ custom_id, method: "POST", url: "/v1/embeddings", body: { model: "e", input: "x" }, ...extra })
  const models = new Set(["e"])
  const good = validateBatchInput([line("\u0000\ud800"), "", line("b")], "/v1/embeddings", models)
  ok(Result.isSuccess(good))
  deepStrictEqual(good.success.map((entry) => entry.custom_id), ["\u0000\ud800", "b"])
  const bad = validateBatchInput(
    [line("a"), line("a"), line("x".repeat(1 << 20)), line(7), "[1]", line("c", { body: { model: "nope" } })],
    "/v1/embeddings",
    models
  )
  ok(Result.isFailure(bad))
  deepStrictEqual(bad.failure.map((error) => [error.line, error.code]), [
    [2, "duplicate_custom_id"],
    [3, "missing_required_parameter"],
    [4, "missing_required_parameter"],
    [5, "invalid_json_line"],
    [6, "model_not_found"]
  ])
  const many = validateBatchInput(Array.from({ length: 500 }, () => "{"), "/v1/embeddings", models)
  ok(Result.isFailure(many))
  strictEqual(many.failure.length, MAX_REPORTED_ERRORS)
  const empty = validateBatchInput(["", " "], "/v1/embeddings", models)
  ok(Result.isFailure(empty))
  strictEqual(empty.failure[0].code, "empty_file")
})

Deno.test("OpenAI output lines: answered lines carry their response, lines never run their error", () => {
  const answered = JSON.parse(encodeBatchOutputLine({
    customId: "\u0000",
    state: "errored",
    statusCode: 400,
    result: '{"error":{"message":"bad"}}',
    requestId: "batch_abc.3"
  }))
  deepStrictEqual(answered.response, {
    status_code: 400,
    request_id: "batch_abc.3",
    body: { error: { message: "bad" } }
  })
  strictEqual(answered.custom_id, "\u0000")
  strictEqual(answered.error, null)
  const cancelled = JSON.parse(encodeBatchOutputLine({
    customId: "c",
    state: "canceled",
    statusCode: null,
    result: null,
    requestId: "batch_abc.4"
  }))
  strictEqual(cancelled.response, null)
  strictEqual(cancelled.error.code, "batch_cancelled")
})
