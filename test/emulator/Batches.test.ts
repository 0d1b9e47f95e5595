/**
 * The emulator's batch APIs through the official SDKs: OpenAI's `files` and `batches` (validating → in_progress →
 * completed over the configured polls, output and error files as OpenAI writes them, validation errors naming the
 * line, cancel mid-run, another key's ids 404) and Anthropic's `messages.batches` (create, retrieve, results, cancel),
 * each line answered and recorded by the emulator's own routes with the batch's key and usage.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI, { toFile } from "openai"
import { withEmulator } from "./Support.ts"

const KEY = "sk-test-batches"

const openAi = (url: string, apiKey = KEY) => new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 })
const anthropic = (url: string, apiKey = KEY) => new Anthropic({ baseURL: url, apiKey, maxRetries: 0 })

const chatLine = (customId: string, text: string, url = "/v1/chat/completions") => ({
  custom_id: customId,
  method: "POST",
  url,
  body: { model: "gpt-4o-mini", messages: [{ role: "user", content: text }] }
})

const jsonl = (lines: ReadonlyArray<unknown>) => lines.map((line) => JSON.stringify(line)).join("\n") + "\n"

const upload = async (client: OpenAI, lines: ReadonlyArray<unknown>) =>
  client.files.create({ file: await toFile(new TextEncoder().encode(jsonl(lines)), "input.jsonl"), purpose: "batch" })

const readJsonl = async (response: Response) =>
  (await response.text()).split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line))

Deno.test("OpenAI batch: validating, in progress for the configured polls, then completed with output and error files", async () => {
  await withEmulator({ validKeys: [KEY], batchPolls: 3 }, async (emulator) => {
    const client = openAi(emulator.url)
    emulator.setFaults([{ match: { model: "broken-model" }, status: 500, message: "Upstream broke." }])
    const lines = [
      chatLine("a", "hello there"),
      chatLine("b", "second line"),
      { ...chatLine("c", "third"), body: { model: "broken-model", messages: [{ role: "user", content: "x" }] } }
    ]
    const file = await client.files.create({
      file: await toFile(new TextEncoder().encode(jsonl(lines)), "input.jsonl"),
      purpose: "batch"
    })
    strictEqual(file.object, "file")
    strictEqual(file.purpose, "batch")
    strictEqual(file.bytes, jsonl(lines).length)
    strictEqual(await (await client.files.content(file.id)).text(), jsonl(lines))
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: "/v1/chat/completions",
      completion_window: "24h",
      metadata: { job: "nightly" }
    })
    strictEqual(created.status, "validating")
    deepStrictEqual(created.metadata, { job: "nightly" })
    const seen: Array<string> = []
    let batch = created
    for (let poll = 0; poll < 10 && batch.status !== "completed"; poll++) {
      batch = await client.batches.retrieve(created.id)
      seen.push(`${batch.status}:${batch.request_counts?.completed}+${batch.request_counts?.failed}`)
    }
    // ceil(3 × k / 3) lines have run after poll k: one, two, then all three (the third failing).
    deepStrictEqual(seen, ["in_progress:1+0", "in_progress:2+0", "completed:2+1"])
    ok(batch.output_file_id !== null && batch.output_file_id !== undefined)
    ok(batch.error_file_id !== null && batch.error_file_id !== undefined)
    const output = await readJsonl(await client.files.content(batch.output_file_id))
    deepStrictEqual(output.map((line) => line.custom_id), ["a", "b"])
    strictEqual(output[0].response.status_code, 200)
    strictEqual(output[0].response.body.choices[0].message.content, "Echo: hello there")
    ok(String(output[0].id).startsWith("batch_req_"))
    strictEqual(output[0].error, null)
    const errors = await readJsonl(await client.files.content(batch.error_file_id))
    deepStrictEqual(errors.map((line) => [line.custom_id, line.response.status_code]), [["c", 500]])
    strictEqual(errors[0].response.body.error.message, "Upstream broke.")
    // Each line was answered by the chat route, recorded with the batch's key, its header and the usage answered.
    const answered = emulator.requests.filter((request) => request.headers["x-emulator-batch"] === created.id)
    deepStrictEqual(answered.map((request) => request.path), Array(3).fill("/v1/chat/completions"))
    ok(answered.every((request) => request.key === KEY))
    strictEqual(answered[0].usage?.input, output[0].response.body.usage.prompt_tokens)
    strictEqual(answered[0].usage?.output, output[0].response.body.usage.completion_tokens)
    const listed = await client.batches.list()
    deepStrictEqual(listed.data.map((item) => item.id), [created.id])
  })
})

Deno.test("OpenAI batch: a bad input fails validation with errors naming the lines; bad creates are refused", async () => {
  await withEmulator({}, async (emulator) => {
    const client = openAi(emulator.url)
    const file = await upload(client, [
      chatLine("a", "fine"),
      chatLine("a", "duplicate"),
      chatLine("c", "wrong url", "/v1/embeddings")
    ])
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: "/v1/chat/completions",
      completion_window: "24h"
    })
    const batch = await client.batches.retrieve(created.id)
    strictEqual(batch.status, "failed")
    deepStrictEqual(
      batch.errors?.data?.map((error) => [error.line, error.code, error.param]),
      [[2, "duplicate_custom_id", "custom_id"], [3, "mismatched_endpoint", "url"]]
    )
    strictEqual(emulator.requests.filter((request) => request.path === "/v1/chat/completions").length, 0)
    await rejects(
      client.batches.create({
        input_file_id: "file-missing",
        endpoint: "/v1/chat/completions",
        completion_window: "24h"
      }),
      (error: unknown) => error instanceof OpenAI.BadRequestError && error.param === "input_file_id"
    )
    await rejects(
      client.batches.create({
        input_file_id: file.id,
        endpoint: "/v1/images" as "/v1/chat/completions",
        completion_window: "24h"
      }),
      (error: unknown) => error instanceof OpenAI.BadRequestError && error.param === "endpoint"
    )
  })
})

Deno.test("OpenAI batch: cancel mid-run keeps the lines that ran; another key sees no file and no batch", async () => {
  await withEmulator({ batchPolls: 4 }, async (emulator) => {
    const client = openAi(emulator.url)
    const file = await upload(client, ["one", "two", "three", "four"].map((text) => chatLine(text, text)))
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: "/v1/chat/completions",
      completion_window: "24h"
    })
    strictEqual((await client.batches.retrieve(created.id)).request_counts?.completed, 1)
    const cancelling = await client.batches.cancel(created.id)
    strictEqual(cancelling.status, "cancelling")
    ok(typeof cancelling.cancelling_at === "number")
    const cancelled = await client.batches.retrieve(created.id)
    strictEqual(cancelled.status, "cancelled")
    deepStrictEqual(cancelled.request_counts, { total: 4, completed: 1, failed: 0 })
    const output = await readJsonl(await client.files.content(cancelled.output_file_id ?? ""))
    deepStrictEqual(output.map((line) => line.custom_id), ["one"])
    await rejects(client.batches.cancel(created.id), (error: unknown) => error instanceof OpenAI.ConflictError)
    const other = openAi(emulator.url, "sk-test-other")
    await rejects(other.files.retrieve(file.id), (error: unknown) => error instanceof OpenAI.NotFoundError)
    await rejects(other.batches.retrieve(created.id), (error: unknown) => error instanceof OpenAI.NotFoundError)
    strictEqual((await other.files.list()).data.length, 0)
    const deleted = await client.files.delete(file.id)
    strictEqual(deleted.deleted, true)
    await rejects(client.files.content(file.id), (error: unknown) => error instanceof OpenAI.NotFoundError)
  })
})

Deno.test("Anthropic Message Batch: in progress, then ended with each result; the results match the recorded usage", async () => {
  await withEmulator({ validKeys: [KEY], batchPolls: 2 }, async (emulator) => {
    const client = anthropic(emulator.url)
    emulator.setFaults([{ match: { model: "claude-broken" }, status: 529, message: "Overloaded." }])
    const params = (text: string, model = "claude-sonnet-4-5") => ({
      model,
      max_tokens: 64,
      messages: [{ role: "user" as const, content: text }]
    })
    const created = await client.messages.batches.create({
      requests: [
        { custom_id: "first", params: params("hello batch") },
        { custom_id: "second", params: params("and again") },
        { custom_id: "third", params: params("fails", "claude-broken") }
      ]
    })
    strictEqual(created.type, "message_batch")
    strictEqual(created.processing_status, "in_progress")
    strictEqual(created.results_url, null)
    // Before it ends its results are refused (the SDK's `results` would retrieve, and so advance, the batch).
    const early = await fetch(`${emulator.url}/v1/messages/batches/${created.id}/results`, {
      headers: { "x-api-key": KEY, "anthropic-version": "2023-06-01" }
    })
    strictEqual(early.status, 400)
    await early.body?.cancel()
    const middle = await client.messages.batches.retrieve(created.id)
    strictEqual(middle.processing_status, "in_progress")
    deepStrictEqual(middle.request_counts, { processing: 1, succeeded: 2, errored: 0, canceled: 0, expired: 0 })
    const ended = await client.messages.batches.retrieve(created.id)
    strictEqual(ended.processing_status, "ended")
    deepStrictEqual(ended.request_counts, { processing: 0, succeeded: 2, errored: 1, canceled: 0, expired: 0 })
    ok(ended.ended_at !== null)
    const results = []
    for await (const result of await client.messages.batches.results(created.id)) results.push(result)
    deepStrictEqual(results.map((item) => [item.custom_id, item.result.type]), [
      ["first", "succeeded"],
      ["second", "succeeded"],
      ["third", "errored"]
    ])
    const first = results[0].result
    ok(first.type === "succeeded")
    strictEqual(first.message.content[0].type === "text" && first.message.content[0].text, "Echo: hello batch")
    const third = results[2].result
    ok(third.type === "errored")
    strictEqual(third.error.error.type, "overloaded_error")
    const answered = emulator.requests.filter((request) => request.headers["x-emulator-batch"] === created.id)
    deepStrictEqual(answered.map((request) => request.key), [KEY, KEY, KEY])
    strictEqual(answered[0].usage?.input, first.message.usage.input_tokens)
    strictEqual(answered[0].usage?.output, first.message.usage.output_tokens)
    const page = await client.messages.batches.list()
    deepStrictEqual(page.data.map((item) => item.id), [created.id])
  })
})

Deno.test("Anthropic Message Batch: cancel mid-run ends it with the rest canceled; bad requests are refused", async () => {
  await withEmulator({ batchPolls: 3 }, async (emulator) => {
    const client = anthropic(emulator.url)
    const params = { model: "claude-sonnet-4-5", max_tokens: 16, messages: [{ role: "user" as const, content: "x" }] }
    const created = await client.messages.batches.create({
      requests: ["a", "b", "c"].map((id) => ({ custom_id: id, params }))
    })
    await client.messages.batches.retrieve(created.id)
    const canceling = await client.messages.batches.cancel(created.id)
    strictEqual(canceling.processing_status, "canceling")
    ok(canceling.cancel_initiated_at !== null)
    const ended = await client.messages.batches.retrieve(created.id)
    strictEqual(ended.processing_status, "ended")
    deepStrictEqual(ended.request_counts, { processing: 0, succeeded: 1, errored: 0, canceled: 2, expired: 0 })
    const types = []
    for await (const result of await client.messages.batches.results(created.id)) types.push(result.result.type)
    deepStrictEqual(types, ["succeeded", "canceled", "canceled"])
    await rejects(
      client.messages.batches.create({ requests: [{ custom_id: "bad id!", params }] }),
      (error: unknown) => error instanceof Anthropic.BadRequestError
    )
    await rejects(
      client.messages.batches.create({ requests: [{ custom_id: "d", params }, { custom_id: "d", params }] }),
      (error: unknown) => error instanceof Anthropic.BadRequestError
    )
    await rejects(
      anthropic(emulator.url, "sk-test-other").messages.batches.retrieve(created.id),
      (error: unknown) => error instanceof Anthropic.NotFoundError
    )
  })
})
