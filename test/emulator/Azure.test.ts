/**
 * The emulator's Azure OpenAI under `/azure` (`emulator/Azure.ts`), through the `openai` package's own Azure
 * clients: `AzureOpenAI` (deployment paths with `api-version`, the `api-key` header) and `OpenAI` pointed at the
 * v1 API (`/azure/openai/v1`). Chat (streamed and not, with the content filter's annotations), embeddings,
 * Responses on v1, the content filter's refusal as the SDK sees it and its cut of an answer, Azure's 401 / 404 / 400
 * shapes, and the usage the emulator records.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import OpenAI, { AzureOpenAI } from "openai"
import { withEmulator } from "./Support.ts"

const KEY = "sk-test-azure-0001"

const dated = (url: string, deployment = "gpt-4o-dep", apiVersion = "2024-10-21") =>
  new AzureOpenAI({ endpoint: `${url}/azure`, apiKey: KEY, apiVersion, deployment, maxRetries: 0 })

const v1 = (url: string) => new OpenAI({ baseURL: `${url}/azure/openai/v1`, apiKey: KEY, maxRetries: 0 })

type Json = Record<string, unknown>

Deno.test("azure: AzureOpenAI chat goes to the deployment path with api-version and api-key, answered with Azure's annotations", async () => {
  await withEmulator({}, async (emulator) => {
    const completion = await dated(emulator.url).chat.completions.create({
      model: "ignored-by-azure",
      messages: [{ role: "user", content: "hello there" }]
    })
    strictEqual(completion.choices[0].message.content, "Echo: hello there")
    strictEqual(completion.model, "gpt-4o-dep", "the deployment in the path is the model answered")
    const raw = completion as unknown as Json
    const prompt = (raw.prompt_filter_results as Array<Json>)[0]
    strictEqual(prompt.prompt_index, 0)
    deepStrictEqual((prompt.content_filter_results as Json).violence, { filtered: false, severity: "safe" })
    const choice = completion.choices[0] as unknown as Json
    deepStrictEqual((choice.content_filter_results as Json).hate, { filtered: false, severity: "safe" })
    const request = emulator.requests[0]
    strictEqual(request.path, "/azure/openai/deployments/gpt-4o-dep/chat/completions")
    strictEqual(request.query["api-version"], "2024-10-21")
    strictEqual(request.headers["api-key"], KEY)
    strictEqual(request.headers.authorization, undefined)
    strictEqual(request.key, KEY)
    strictEqual(request.usage?.input, completion.usage?.prompt_tokens)
    strictEqual(request.usage?.output, completion.usage?.completion_tokens)
  })
})

Deno.test("azure: a stream starts with the prompt_filter_results chunk (empty choices) and reports usage", async () => {
  await withEmulator({}, async (emulator) => {
    const stream = await dated(emulator.url).chat.completions.create({
      model: "gpt-4o-dep",
      messages: [{ role: "user", content: "stream this" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    const chunks: Array<Json> = []
    for await (const chunk of stream) chunks.push(chunk as unknown as Json)
    const first = chunks[0]
    deepStrictEqual(first.choices, [])
    strictEqual(first.id, "")
    strictEqual(first.model, "")
    ok(Array.isArray(first.prompt_filter_results))
    const text = chunks.flatMap((chunk) =>
      (chunk.choices as Array<Json>).map((choice) => ((choice.delta as Json)?.content as string | undefined) ?? "")
    ).join("")
    strictEqual(text, "Echo: stream this")
    const content = chunks.find((chunk) => ((chunk.choices as Array<Json>)[0]?.delta as Json)?.content === "Echo: ")
    ok(content !== undefined && "content_filter_results" in (content.choices as Array<Json>)[0])
    const usage = chunks.at(-1)?.usage as Json
    strictEqual(emulator.requests[0].usage?.output, usage.completion_tokens)
  })
})

Deno.test("azure: embeddings on the deployment path; Responses and chat on the v1 API with the deployment as model", async () => {
  await withEmulator({}, async (emulator) => {
    const embedded = await dated(emulator.url, "embed-dep").embeddings.create({
      model: "embed-dep",
      input: ["one", "two"]
    })
    strictEqual(embedded.data.length, 2)
    strictEqual(emulator.requests[0].path, "/azure/openai/deployments/embed-dep/embeddings")

    const client = v1(emulator.url)
    const response = await client.responses.create({ model: "gpt-4o-dep", input: "hello responses" })
    strictEqual(response.output_text, "Echo: hello responses")
    const chat = await client.chat.completions.create({
      model: "gpt-4o-dep",
      messages: [{ role: "user", content: "hi v1" }]
    })
    strictEqual(chat.choices[0].message.content, "Echo: hi v1")
    const [responses, chatRequest] = emulator.requests.slice(1)
    strictEqual(responses.path, "/azure/openai/v1/responses")
    strictEqual(chatRequest.path, "/azure/openai/v1/chat/completions")
    strictEqual((chatRequest.body as Json).model, "gpt-4o-dep")
    strictEqual(responses.headers.authorization, `Bearer ${KEY}`, "the OpenAI client sends its key as Bearer")
    strictEqual(responses.usage?.input, response.usage?.input_tokens)
  })
})

Deno.test("azure: the content filter's refusal as the SDK sees it, on both URL families; nothing reported", async () => {
  await withEmulator({}, async (emulator) => {
    const refused = (error: unknown) => {
      ok(error instanceof OpenAI.BadRequestError)
      strictEqual(error.status, 400)
      strictEqual(error.code, "content_filter")
      strictEqual(error.param, "prompt")
      const inner = (error.error as Json).innererror as Json
      strictEqual(inner.code, "ResponsibleAIPolicyViolation")
      deepStrictEqual((inner.content_filter_result as Json).violence, { filtered: true, severity: "high" })
      return true
    }
    await rejects(
      dated(emulator.url).chat.completions.create({
        model: "gpt-4o-dep",
        messages: [{ role: "user", content: "something unsafe" }]
      }),
      refused
    )
    await rejects(v1(emulator.url).responses.create({ model: "gpt-4o-dep", input: "unsafe words" }), refused)
    strictEqual(emulator.requests[0].usage, undefined)
    strictEqual(emulator.requests[1].usage, undefined)
  })
})

Deno.test("azure: an answer the completion filter flags ends with finish_reason content_filter", async () => {
  await withEmulator({}, async (emulator) => {
    const client = dated(emulator.url)
    const completion = await client.chat.completions.create({
      model: "gpt-4o-dep",
      messages: [{ role: "user", content: "a violent story" }]
    })
    strictEqual(completion.choices[0].finish_reason, "content_filter")
    strictEqual(completion.choices[0].message.content ?? null, null)
    deepStrictEqual(
      ((completion.choices[0] as unknown as Json).content_filter_results as Json).violence,
      { filtered: true, severity: "medium" }
    )
    const stream = await client.chat.completions.create({
      model: "gpt-4o-dep",
      messages: [{ role: "user", content: "a violent story" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    let finish: string | null = null
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    strictEqual(text, "Echo: a ")
    strictEqual(finish, "content_filter")
    ok((emulator.requests[1].usage?.output ?? 0) > 0, "usage is reported as generated")
  })
})

Deno.test("azure: Azure's own refusals: no key, a missing or unknown api-version, an unknown deployment, v1 with a dated version", async () => {
  await withEmulator({}, async (emulator) => {
    const post = (path: string, headers: Record<string, string> = { "api-key": KEY }) =>
      fetch(`${emulator.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] })
      }).then(async (response) => ({ status: response.status, body: await response.json() }))
    const noKey = await post("/azure/openai/deployments/dep/chat/completions?api-version=2024-10-21", {})
    strictEqual(noKey.status, 401)
    strictEqual(noKey.body.error.code, "401")
    ok(String(noKey.body.error.message).startsWith("Access denied due to invalid subscription key"))
    deepStrictEqual(await post("/azure/openai/deployments/dep/chat/completions"), {
      status: 404,
      body: { error: { code: "404", message: "Resource not found" } }
    })
    strictEqual((await post("/azure/openai/deployments/dep/chat/completions?api-version=2099-01-01")).status, 404)
    const missing = await post("/azure/openai/deployments/missing-dep/chat/completions?api-version=2024-10-21")
    strictEqual(missing.status, 404)
    strictEqual(missing.body.error.code, "DeploymentNotFound")
    deepStrictEqual(await post("/azure/openai/v1/chat/completions?api-version=2024-10-21"), {
      status: 400,
      body: { error: { code: "BadRequest", message: "API version not supported" } }
    })
    const bearer = await post("/azure/openai/v1/chat/completions", { authorization: "Bearer entra-token-test" })
    strictEqual(bearer.status, 400, "a Bearer token is a key; the body without a model is the refusal")

    emulator.setValidKeys([KEY])
    await rejects(
      new AzureOpenAI({
        endpoint: `${emulator.url}/azure`,
        apiKey: "sk-test-wrong",
        apiVersion: "2024-10-21",
        deployment: "dep",
        maxRetries: 0
      }).chat.completions.create({ model: "dep", messages: [{ role: "user", content: "hi" }] }),
      (error: unknown) => error instanceof OpenAI.AuthenticationError && error.code === "401"
    )
  })
})

Deno.test("azure: Sora 2 videos on the v1 API (OpenAI's video schema) with api-key: create, poll, remix, content", async () => {
  // A 300 ms task step: the create's own answer still sees `queued` on a loaded machine (at 20 ms it did not).
  await withEmulator({ videoStepMs: 300, validKeys: [KEY] }, async (emulator) => {
    // AzureOpenAI on the v1 base URL: `api-key` header, `api-version=preview` (the v1 API's own).
    const client = new AzureOpenAI({
      baseURL: `${emulator.url}/azure/openai/v1`,
      apiKey: KEY,
      apiVersion: "preview",
      maxRetries: 0
    })
    const created = await client.videos.create({ model: "sora-2-dep" as "sora-2", prompt: "a calm lake", seconds: "4" })
    strictEqual(created.status, "queued")
    let video = created
    for (let tries = 0; video.status !== "completed" && tries < 100; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      video = await client.videos.retrieve(created.id)
    }
    strictEqual(video.status, "completed")
    const bytes = new Uint8Array(await (await client.videos.downloadContent(created.id)).arrayBuffer())
    strictEqual(new TextDecoder().decode(bytes.subarray(4, 8)), "ftyp")
    const remixed = await client.videos.remix(created.id, { prompt: "at night" })
    strictEqual(remixed.remixed_from_video_id, created.id)
    const paths = emulator.requests.map((request) => `${request.method} ${request.path}`)
    ok(paths.includes("POST /azure/openai/v1/videos"))
    ok(paths.includes(`GET /azure/openai/v1/videos/${created.id}`))
    ok(paths.includes(`GET /azure/openai/v1/videos/${created.id}/content`))
    ok(paths.includes(`POST /azure/openai/v1/videos/${created.id}/remix`))
    ok(
      emulator.requests.every((request) =>
        request.headers["api-key"] === KEY && request.query["api-version"] === "preview"
      )
    )
    const dated = await fetch(`${emulator.url}/azure/openai/v1/videos/${created.id}?api-version=2024-10-21`, {
      headers: { "api-key": KEY }
    })
    strictEqual(dated.status, 400)
    deepStrictEqual(await dated.json(), { error: { code: "BadRequest", message: "API version not supported" } })
  })
})
