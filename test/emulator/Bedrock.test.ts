/**
 * The emulator's Bedrock Runtime under `/bedrock` (`emulator/Bedrock*.ts`), with AWS's and Anthropic's own SDKs as
 * its clients: `@aws-sdk/client-bedrock-runtime` (Converse, ConverseStream, InvokeModel, InvokeModelWithResponseStream;
 * SigV4-signed, over HTTP/2 as its default handler speaks it) and `@anthropic-ai/bedrock-sdk` (Messages over
 * InvokeModel, SigV4 over fetch). Covers text, tool use round trips, images, reasoning and its signatures, cache points,
 * embeddings, Bedrock's typed exceptions as the SDK surfaces them (also inside a stream), and refused credentials.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import {
  BedrockRuntimeClient,
  type ContentBlock,
  ConverseCommand,
  type ConverseCommandInput,
  ConverseStreamCommand,
  type ConverseStreamOutput,
  InvokeModelCommand,
  InvokeModelWithResponseStreamCommand,
  type Message,
  ModelNotReadyException,
  ThrottlingException,
  ValidationException
} from "@aws-sdk/client-bedrock-runtime"
import AnthropicBedrock from "@anthropic-ai/bedrock-sdk"
import { Effect } from "effect"
import {
  BEDROCK_TEST_ACCESS_KEY_ID,
  BEDROCK_TEST_API_KEY,
  BEDROCK_TEST_SECRET_ACCESS_KEY
} from "../../emulator/BedrockAuth.ts"
import { framePayload } from "../../emulator/BedrockWire.ts"
import { embeddingVector } from "../../emulator/Embeddings.ts"
import type { Emulator } from "../../emulator/Emulator.ts"
import { signSigV4 } from "../../src/upstreams/auth/CallSigning.ts"
import { pixelPng, weatherSchema, withEmulator } from "./Support.ts"

const CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"
const PROFILE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

const credentials = { accessKeyId: BEDROCK_TEST_ACCESS_KEY_ID, secretAccessKey: BEDROCK_TEST_SECRET_ACCESS_KEY }

/** A Bedrock Runtime client of the emulator (no retries, so faults surface at once). */
const bedrock = (emulator: Emulator, secretAccessKey = BEDROCK_TEST_SECRET_ACCESS_KEY, sessionToken?: string) =>
  new BedrockRuntimeClient({
    region: "us-east-1",
    endpoint: `${emulator.url}/bedrock`,
    credentials: { accessKeyId: BEDROCK_TEST_ACCESS_KEY_ID, secretAccessKey, sessionToken },
    maxAttempts: 1
  })

/** Runs `body` with a client and destroys the client afterwards (it holds an HTTP/2 session). */
const withClient = async (
  emulator: Emulator,
  body: (client: BedrockRuntimeClient) => Promise<void>,
  secretAccessKey?: string,
  sessionToken?: string
) => {
  const client = bedrock(emulator, secretAccessKey, sessionToken)
  try {
    await body(client)
  } finally {
    client.destroy()
  }
}

const user = (...content: Array<ContentBlock>): Message => ({ role: "user", content })

const weatherTool = {
  toolSpec: { name: "get_weather", description: "Weather for a city", inputSchema: { json: weatherSchema } }
}

/** The events of a ConverseStream, in order. */
const collect = async (stream: AsyncIterable<ConverseStreamOutput> | undefined) => {
  const events: Array<ConverseStreamOutput> = []
  for await (const event of stream ?? []) events.push(event)
  return events
}

const eventName = (event: ConverseStreamOutput): string => Object.keys(event).find((key) => key !== "$unknown") ?? ""

Deno.test("bedrock converse: text answer, Bedrock's usage and metrics, the signed key recorded with its usage", async () => {
  await withEmulator({}, async (emulator) => {
    await withClient(emulator, async (client) => {
      const response = await client.send(
        new ConverseCommand({
          modelId: CLAUDE,
          system: [{ text: "Be brief." }],
          messages: [user({ text: "Hello Bedrock" })],
          inferenceConfig: { maxTokens: 100, temperature: 0.5 }
        })
      )
      deepStrictEqual(response.output?.message, { role: "assistant", content: [{ text: "Echo: Hello Bedrock" }] })
      strictEqual(response.stopReason, "end_turn")
      // "Be brief." + "Hello Bedrock" = 22 characters → 6 tokens, + 3 for the message.
      deepStrictEqual(response.usage, { inputTokens: 9, outputTokens: 3, totalTokens: 12 })
      deepStrictEqual(response.metrics, { latencyMs: 40 })
      ok(response.$metadata.requestId !== undefined, "x-amzn-requestid is sent")
    })
    const recorded = emulator.requests[0]
    strictEqual(recorded.path, `/bedrock/model/${encodeURIComponent(CLAUDE)}/converse`)
    strictEqual(recorded.key, BEDROCK_TEST_ACCESS_KEY_ID)
    deepStrictEqual(recorded.usage, { input: 9, output: 3, cacheRead: 0, cacheWrite: 0, reasoning: 0 })
  })
})

Deno.test("bedrock converse: a tool call, then the tool result answered (round trip)", async () => {
  await withEmulator({}, async (emulator) => {
    await withClient(emulator, async (client) => {
      const toolConfig = { tools: [weatherTool] }
      const first = await client.send(
        new ConverseCommand({ modelId: PROFILE, toolConfig, messages: [user({ text: "weather in Paris" })] })
      )
      strictEqual(first.stopReason, "tool_use")
      const call = first.output?.message?.content?.[0]?.toolUse
      ok(call !== undefined)
      strictEqual(call.name, "get_weather")
      ok(call.toolUseId?.startsWith("tooluse_"))
      deepStrictEqual(call.input, { location: "sample", unit: "celsius" })
      const second = await client.send(
        new ConverseCommand({
          modelId: PROFILE,
          toolConfig,
          messages: [
            user({ text: "weather in Paris" }),
            first.output!.message!,
            user({ toolResult: { toolUseId: call.toolUseId, content: [{ text: "sunny" }, { json: { c: 21 } }] } })
          ]
        })
      )
      deepStrictEqual(second.output?.message?.content, [{ text: 'Tool result: sunny {"c":21}' }])
      strictEqual(second.stopReason, "end_turn")
      // `tool:<name> {json}` in the prompt names the call, as on the other vendors.
      const directed = await client.send(
        new ConverseCommand({
          modelId: PROFILE,
          toolConfig: { tools: [weatherTool], toolChoice: { any: {} } },
          messages: [user({ text: 'tool:get_weather {"location": "Oslo", "unit": "celsius"}' })]
        })
      )
      deepStrictEqual(directed.output?.message?.content?.[0]?.toolUse?.input, { location: "Oslo", unit: "celsius" })
    })
  })
})

Deno.test("bedrock converse: an image block (bytes sent as base64 by the SDK) is seen", async () => {
  await withEmulator({}, async (emulator) => {
    await withClient(emulator, async (client) => {
      const bytes = Uint8Array.from(atob(pixelPng), (char) => char.charCodeAt(0))
      const response = await client.send(
        new ConverseCommand({
          modelId: CLAUDE,
          messages: [user({ image: { format: "png", source: { bytes } } }, { text: "describe" })]
        })
      )
      deepStrictEqual(response.output?.message?.content, [{ text: "I see 1 image(s) [image/png] Echo: describe" }])
    })
    const sent = emulator.requests[0].body as { messages: Array<{ content: Array<{ image?: { source: unknown } }> }> }
    deepStrictEqual(sent.messages[0].content[0].image?.source, { bytes: pixelPng })
  })
})

Deno.test("bedrock converse: reasoning when thinking is asked, its signature checked when sent back", async () => {
  await withEmulator({}, async (emulator) => {
    await withClient(emulator, async (client) => {
      const request = (messages: Array<Message>): ConverseCommandInput => ({
        modelId: CLAUDE,
        messages,
        inferenceConfig: { maxTokens: 2048 },
        additionalModelRequestFields: { thinking: { type: "enabled", budget_tokens: 1024 } }
      })
      const first = await client.send(new ConverseCommand(request([user({ text: "deep question" })])))
      const [reasoning, text] = first.output?.message?.content ?? []
      strictEqual(reasoning.reasoningContent?.reasoningText?.text, "Thinking about: deep question")
      ok(reasoning.reasoningContent?.reasoningText?.signature?.startsWith("sig-"))
      deepStrictEqual(text, { text: "Echo: deep question" })
      // Output tokens count the reasoning words too: 4 + 3.
      strictEqual(first.usage?.outputTokens, 7)
      const next = [user({ text: "deep question" }), first.output!.message!, user({ text: "and then?" })]
      const second = await client.send(new ConverseCommand(request(next)))
      strictEqual(second.stopReason, "end_turn")
      const forged: Message = {
        role: "assistant",
        content: [{
          reasoningContent: { reasoningText: { text: "Thinking about: deep question", signature: "sig-forged" } }
        }]
      }
      const refused = await client.send(new ConverseCommand(request([next[0], forged, next[2]]))).catch((e) => e)
      ok(refused instanceof ValidationException)
      strictEqual(
        refused.message,
        "The model returned the following errors: messages.1.content.0: Invalid `signature` in `thinking` block"
      )
      const budget = await client.send(
        new ConverseCommand({
          ...request([user({ text: "x" })]),
          additionalModelRequestFields: { thinking: { type: "enabled", budget_tokens: 10 } }
        })
      ).catch((e) => e)
      ok(budget instanceof ValidationException)
    })
  })
})

Deno.test("bedrock converse: a cache point writes the prefix once, later requests read it", async () => {
  await withEmulator({}, async (emulator) => {
    await withClient(emulator, async (client) => {
      const system = [{ text: "You are a careful assistant with a long system prompt." }, {
        cachePoint: { type: "default" as const }
      }]
      const ask = (text: string) =>
        client.send(new ConverseCommand({ modelId: CLAUDE, system, messages: [user({ text })] }))
      const first = await ask("first question")
      // The prefix: 54 characters of system text → 14 tokens, no message.
      deepStrictEqual(first.usage, {
        inputTokens: first.usage!.totalTokens! - first.usage!.outputTokens! - 14,
        outputTokens: 3,
        totalTokens: first.usage!.totalTokens,
        cacheReadInputTokens: 0,
        cacheWriteInputTokens: 14
      })
      const second = await ask("second question")
      strictEqual(second.usage?.cacheReadInputTokens, 14)
      strictEqual(second.usage?.cacheWriteInputTokens, 0)
      strictEqual(second.usage!.inputTokens! + 14 + second.usage!.outputTokens!, second.usage!.totalTokens)
      // Another model keeps its own cache.
      const other = await client.send(
        new ConverseCommand({ modelId: "amazon.nova-pro-v1:0", system, messages: [user({ text: "third" })] })
      )
      strictEqual(other.usage?.cacheWriteInputTokens, 14)
    })
    deepStrictEqual(emulator.requests.map((request) => [request.usage?.cacheRead, request.usage?.cacheWrite]), [
      [0, 14],
      [14, 0],
      [0, 14]
    ])
  })
})

Deno.test("bedrock converse: Bedrock's validation refusals as typed ValidationExceptions", async () => {
  await withEmulator({}, async (emulator) => {
    await withClient(emulator, async (client) => {
      const refused = async (input: ConverseCommandInput, message: string) => {
        const error = await client.send(new ConverseCommand(input)).catch((e) => e)
        ok(error instanceof ValidationException, String(error))
        strictEqual(error.message, message)
        strictEqual(error.$metadata.httpStatusCode, 400)
      }
      await refused(
        { modelId: CLAUDE, messages: [{ role: "assistant", content: [{ text: "hi" }] }] },
        "A conversation must start with a user message. Try again with a conversation that starts with a user message."
      )
      await refused(
        { modelId: "acme.unknown-model-v1", messages: [user({ text: "hi" })] },
        "The provided model identifier is invalid."
      )
      await refused(
        { modelId: "amazon.titan-embed-text-v2:0", messages: [user({ text: "hi" })] },
        "This action doesn't support the model that you provided. Try again with a supported text or chat model."
      )
      await refused(
        {
          modelId: CLAUDE,
          messages: [
            user({ text: "hi" }),
            { role: "assistant", content: [{ toolUse: { toolUseId: "tooluse_1", name: "get_weather", input: {} } }] },
            user({ toolResult: { toolUseId: "tooluse_1", content: [{ text: "sunny" }] } })
          ]
        },
        "The toolConfig field must be defined when using toolUse and toolResult content blocks."
      )
      const range = await client.send(
        new ConverseCommand({ modelId: CLAUDE, messages: [user({ text: "hi" })], inferenceConfig: { temperature: 3 } })
      ).catch((e) => e)
      ok(range instanceof ValidationException)
      ok(range.message.includes("inferenceConfig.temperature"))
    })
  })
})

Deno.test("bedrock converse-stream: messageStart, word deltas, contentBlockStop, messageStop, metadata", async () => {
  await withEmulator({}, async (emulator) => {
    await withClient(emulator, async (client) => {
      const response = await client.send(
        new ConverseStreamCommand({ modelId: PROFILE, messages: [user({ text: "hello there" })] })
      )
      const events = await collect(response.stream)
      deepStrictEqual(events.map(eventName), [
        "messageStart",
        "contentBlockDelta",
        "contentBlockDelta",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata"
      ])
      deepStrictEqual(events[0].messageStart, { role: "assistant" })
      strictEqual(events.slice(1, 4).map((event) => event.contentBlockDelta?.delta?.text).join(""), "Echo: hello there")
      deepStrictEqual(events[5].messageStop, { stopReason: "end_turn" })
      deepStrictEqual(events[6].metadata?.usage, { inputTokens: 6, outputTokens: 3, totalTokens: 9 })
      deepStrictEqual(events[6].metadata?.metrics, { latencyMs: 40 })
    })
    strictEqual(emulator.requests[0].headers["x-amz-content-sha256"] !== undefined, true)
    deepStrictEqual(emulator.requests[0].usage, { input: 6, output: 3, cacheRead: 0, cacheWrite: 0, reasoning: 0 })
  })
})

Deno.test("bedrock converse-stream: reasoning deltas with their signature, a tool call's input in fragments", async () => {
  await withEmulator({}, async (emulator) => {
    await withClient(emulator, async (client) => {
      const response = await client.send(
        new ConverseStreamCommand({
          modelId: CLAUDE,
          messages: [user({ text: "weather please" })],
          toolConfig: { tools: [weatherTool], toolChoice: { any: {} } },
          inferenceConfig: { maxTokens: 4096 },
          additionalModelRequestFields: { thinking: { type: "enabled", budget_tokens: 1024 } }
        })
      )
      const events = await collect(response.stream)
      const reasoning = events.filter((event) => event.contentBlockDelta?.contentBlockIndex === 0)
      strictEqual(
        reasoning.map((event) => event.contentBlockDelta?.delta?.reasoningContent?.text ?? "").join(""),
        "Thinking about: weather please"
      )
      ok(reasoning.at(-1)?.contentBlockDelta?.delta?.reasoningContent?.signature?.startsWith("sig-"))
      const start = events.find((event) => event.contentBlockStart !== undefined)?.contentBlockStart
      strictEqual(start?.contentBlockIndex, 1)
      strictEqual(start?.start?.toolUse?.name, "get_weather")
      ok(start?.start?.toolUse?.toolUseId?.startsWith("tooluse_"))
      const input = events
        .filter((event) => event.contentBlockDelta?.contentBlockIndex === 1)
        .map((event) => event.contentBlockDelta?.delta?.toolUse?.input ?? "")
        .join("")
      deepStrictEqual(JSON.parse(input), { location: "sample", unit: "celsius" })
      strictEqual(events.find((event) => event.messageStop)?.messageStop?.stopReason, "tool_use")
    })
  })
})

Deno.test('bedrock converse-stream: every event JSON carries Bedrock\'s "p" padding on the wire', async () => {
  await withEmulator({}, async (emulator) => {
    const response = await fetch(`${emulator.url}/bedrock/model/${encodeURIComponent(CLAUDE)}/converse-stream`, {
      method: "POST",
      headers: { authorization: `Bearer ${BEDROCK_TEST_API_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: [{ text: "hi" }] }] })
    })
    strictEqual(response.headers.get("content-type"), "application/vnd.amazon.eventstream")
    const bytes = new Uint8Array(await response.arrayBuffer())
    const payloads: Array<Record<string, unknown>> = []
    for (let offset = 0; offset < bytes.length;) {
      const length = new DataView(bytes.buffer, offset, 4).getUint32(0)
      payloads.push(framePayload(bytes.subarray(offset, offset + length)) as Record<string, unknown>)
      offset += length
    }
    strictEqual(payloads.length, 6)
    for (const payload of payloads) ok(typeof payload.p === "string" && /^[a-zA-Z0-9]{1,40}$/.test(payload.p))
    strictEqual(emulator.requests[0].key, BEDROCK_TEST_API_KEY, "a Bedrock API key authenticates as a Bearer token")
  })
})

Deno.test("bedrock: typed ThrottlingException and ModelNotReadyException from faults; a throttling frame mid-stream", async () => {
  await withEmulator({}, async (emulator) => {
    await withClient(emulator, async (client) => {
      const input = { modelId: CLAUDE, messages: [user({ text: "hi" })] }
      emulator.setFaults([{ status: 429, times: 1 }])
      const throttled = await client.send(new ConverseCommand(input)).catch((e) => e)
      ok(throttled instanceof ThrottlingException, String(throttled))
      strictEqual(throttled.message, "Too many requests, please wait before trying again.")
      strictEqual(throttled.$metadata.httpStatusCode, 429)
      emulator.setFaults([{
        status: 429,
        errorType: "ModelNotReadyException",
        message: "Model is not ready.",
        times: 1
      }])
      const notReady = await client.send(new ConverseCommand(input)).catch((e) => e)
      ok(notReady instanceof ModelNotReadyException, String(notReady))
      strictEqual(notReady.message, "Model is not ready.")
      emulator.setFaults([{ status: 429, breakAfterEvents: 2, times: 1 }])
      const response = await client.send(new ConverseStreamCommand(input))
      const seen: Array<string> = []
      const failure = await (async () => {
        for await (const event of response.stream ?? []) seen.push(eventName(event))
      })().catch((e) => e)
      ok(failure instanceof ThrottlingException, String(failure))
      deepStrictEqual(seen, ["messageStart", "contentBlockDelta"])
    })
    // The stream cut after two events reported no usage yet.
    strictEqual(emulator.requests[2].usage, undefined)
  })
})

Deno.test("bedrock: a malformed fault breaks the event stream the SDK decodes", async () => {
  await withEmulator({}, async (emulator) => {
    await withClient(emulator, async (client) => {
      emulator.setFaults([{ malformed: true, times: 1 }])
      await rejects(
        client.send(new ConverseStreamCommand({ modelId: CLAUDE, messages: [user({ text: "hi" })] }))
          .then((response) => collect(response.stream)),
        /Truncated event message received/
      )
    })
  })
})

Deno.test("bedrock: refused credentials (a wrong secret, an unknown key, a changed body, a stale date, no key)", async () => {
  await withEmulator({}, async (emulator) => {
    const input = { modelId: CLAUDE, messages: [user({ text: "hi" })] }
    await withClient(emulator, async (client) => {
      const error = await client.send(new ConverseCommand(input)).catch((e) => e)
      strictEqual(error.name, "InvalidSignatureException")
      strictEqual(error.$metadata.httpStatusCode, 403)
      ok(error.message.startsWith("The request signature we calculated does not match the signature you provided."))
    }, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYWRONGKEY")
    const stranger = new BedrockRuntimeClient({
      region: "us-east-1",
      endpoint: `${emulator.url}/bedrock`,
      credentials: { accessKeyId: "AKIDUNKNOWN", secretAccessKey: BEDROCK_TEST_SECRET_ACCESS_KEY },
      maxAttempts: 1
    })
    try {
      const error = await stranger.send(new ConverseCommand(input)).catch((e) => e)
      strictEqual(error.name, "UnrecognizedClientException")
      strictEqual(error.message, "The security token included in the request is invalid.")
    } finally {
      stranger.destroy()
    }
    // A session token is taken with a known access key.
    await withClient(
      emulator,
      async (client) => {
        const response = await client.send(new ConverseCommand(input))
        strictEqual(response.stopReason, "end_turn")
      },
      undefined,
      "FwoGZXIvYXdzEXAMPLESESSIONTOKEN"
    )
    strictEqual(emulator.requests.at(-1)?.headers["x-amz-security-token"], "FwoGZXIvYXdzEXAMPLESESSIONTOKEN")

    const url = `${emulator.url}/bedrock/model/${encodeURIComponent(CLAUDE)}/converse`
    const body = JSON.stringify({ messages: [{ role: "user", content: [{ text: "hi" }] }] })
    const sign = (date?: Date) =>
      Effect.runPromise(
        signSigV4(
          { _tag: "SigV4", region: "us-east-1", service: "bedrock", credentials },
          { method: "POST", url, headers: { "content-type": "application/json" }, body },
          date
        )
      )
    const send = async (headers: Record<string, string>, sent = body) => {
      const response = await fetch(url, { method: "POST", headers, body: sent })
      return { status: response.status, type: response.headers.get("x-amzn-errortype"), body: await response.json() }
    }
    deepStrictEqual((await send(await sign())).status, 200, "signSigV4's own signature is taken")
    const changed = await send(await sign(), body.replace("hi", "ho"))
    deepStrictEqual(changed, {
      status: 403,
      type: "InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.bedrock/",
      body: { message: "The provided 'x-amz-content-sha256' header does not match what was computed." }
    })
    const stale = await send(await sign(new Date(Date.now() - 10 * 60 * 1000)))
    strictEqual(stale.status, 403)
    ok(String(stale.body.message).startsWith("Signature expired: "))
    const none = await send({ "content-type": "application/json" })
    deepStrictEqual([none.status, none.type?.split(":")[0]], [403, "MissingAuthenticationTokenException"])
    const badKey = await send({ authorization: "Bearer ABSK-not-a-key", "content-type": "application/json" })
    deepStrictEqual([badKey.status, badKey.type?.split(":")[0]], [403, "UnrecognizedClientException"])
    // No refused request reported usage.
    strictEqual(emulator.requests.filter((request) => request.usage !== undefined).length, 2)
  })
})

Deno.test("bedrock invoke: Claude's Messages body (anthropic_version, no model, no stream), token count headers", async () => {
  await withEmulator({}, async (emulator) => {
    await withClient(emulator, async (client) => {
      const response = await client.send(
        new InvokeModelCommand({
          modelId: CLAUDE,
          contentType: "application/json",
          body: JSON.stringify({
            anthropic_version: "bedrock-2023-05-31",
            anthropic_beta: ["interleaved-thinking-2025-05-14"],
            max_tokens: 100,
            system: "Be brief.",
            messages: [{ role: "user", content: "Hello Claude" }]
          })
        })
      )
      const message = JSON.parse(new TextDecoder().decode(response.body))
      strictEqual(message.type, "message")
      deepStrictEqual(message.content, [{ type: "text", text: "Echo: Hello Claude" }])
      strictEqual(message.stop_reason, "end_turn")
      strictEqual(message.usage.output_tokens, 3)
      strictEqual(response.contentType, "application/json")
      for (const key of ["model", "stream"]) {
        const error = await client.send(
          new InvokeModelCommand({
            modelId: CLAUDE,
            body: JSON.stringify({
              anthropic_version: "bedrock-2023-05-31",
              max_tokens: 10,
              messages: [{ role: "user", content: "hi" }],
              [key]: key === "model" ? CLAUDE : true
            })
          })
        ).catch((e) => e)
        ok(error instanceof ValidationException)
        strictEqual(
          error.message,
          `Malformed input request: #: extraneous key [${key}] is not permitted, please reformat your input and try again.`
        )
      }
      const missing = await client.send(
        new InvokeModelCommand({ modelId: CLAUDE, body: JSON.stringify({ max_tokens: 10, messages: [] }) })
      ).catch((e) => e)
      ok(missing instanceof ValidationException)
      ok(missing.message.includes("#: required key [anthropic_version] not found"))
      // Claude's own refusal, carried by a ValidationException.
      const role = await client.send(
        new InvokeModelCommand({
          modelId: CLAUDE,
          body: JSON.stringify({
            anthropic_version: "bedrock-2023-05-31",
            max_tokens: 10,
            messages: [{ role: "robot", content: "hi" }]
          })
        })
      ).catch((e) => e)
      ok(role instanceof ValidationException)
      strictEqual(role.message, "messages.0.role: Input should be 'user', 'assistant' or 'system'")
    })
    deepStrictEqual(emulator.requests[0].usage, { input: 9, output: 3, cacheRead: 0, cacheWrite: 0, reasoning: 0 })
    // The headers Bedrock sends with InvokeModel.
    const response = await fetch(`${emulator.url}/bedrock/model/${encodeURIComponent(CLAUDE)}/invoke`, {
      method: "POST",
      headers: { authorization: `Bearer ${BEDROCK_TEST_API_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({
        anthropic_version: "bedrock-2023-05-31",
        max_tokens: 10,
        messages: [{ role: "user", content: "Hello Claude" }]
      })
    })
    await response.body?.cancel()
    strictEqual(response.headers.get("x-amzn-bedrock-input-token-count"), "6")
    strictEqual(response.headers.get("x-amzn-bedrock-output-token-count"), "3")
    strictEqual(response.headers.get("x-amzn-bedrock-invocation-latency"), "40")
  })
})

Deno.test("bedrock invoke-with-response-stream: chunks carry Anthropic's events, the last with invocation metrics", async () => {
  await withEmulator({}, async (emulator) => {
    await withClient(emulator, async (client) => {
      const response = await client.send(
        new InvokeModelWithResponseStreamCommand({
          modelId: PROFILE,
          body: JSON.stringify({
            anthropic_version: "bedrock-2023-05-31",
            max_tokens: 100,
            messages: [{ role: "user", content: "hello there" }]
          })
        })
      )
      const events: Array<Record<string, unknown>> = []
      for await (const part of response.body ?? []) {
        ok(part.chunk?.bytes !== undefined, "only chunks")
        events.push(JSON.parse(new TextDecoder().decode(part.chunk.bytes)))
      }
      deepStrictEqual(events.map((event) => event.type), [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop"
      ])
      deepStrictEqual(events.at(-1)?.["amazon-bedrock-invocationMetrics"], {
        inputTokenCount: 6,
        outputTokenCount: 3,
        invocationLatency: 40,
        firstByteLatency: 10
      })
      strictEqual(response.contentType, "application/json")
    })
    deepStrictEqual(emulator.requests[0].usage, { input: 6, output: 3, cacheRead: 0, cacheWrite: 0, reasoning: 0 })
  })
})

Deno.test("bedrock invoke: Titan Text Embeddings v2 and Cohere Embed v3", async () => {
  await withEmulator({}, async (emulator) => {
    await withClient(emulator, async (client) => {
      const titan = await client.send(
        new InvokeModelCommand({
          modelId: "amazon.titan-embed-text-v2:0",
          body: JSON.stringify({ inputText: "hello world", dimensions: 256, normalize: true })
        })
      )
      const titanBody = JSON.parse(new TextDecoder().decode(titan.body))
      deepStrictEqual(titanBody, {
        embedding: embeddingVector("amazon.titan-embed-text-v2:0", "hello world", 256),
        inputTextTokenCount: 3
      })
      const badDimensions = await client.send(
        new InvokeModelCommand({
          modelId: "amazon.titan-embed-text-v2:0",
          body: JSON.stringify({ inputText: "x", dimensions: 100 })
        })
      ).catch((e) => e)
      ok(badDimensions instanceof ValidationException)
      strictEqual(
        badDimensions.message,
        "Malformed input request: #/dimensions: 100 is not a valid enum value, please reformat your input and try again."
      )
      const cohere = await client.send(
        new InvokeModelCommand({
          modelId: "cohere.embed-multilingual-v3",
          body: JSON.stringify({ texts: ["one", "two"], input_type: "search_document" })
        })
      )
      const cohereBody = JSON.parse(new TextDecoder().decode(cohere.body))
      strictEqual(cohereBody.response_type, "embeddings_floats")
      deepStrictEqual(cohereBody.texts, ["one", "two"])
      deepStrictEqual(cohereBody.embeddings[1], embeddingVector("cohere.embed-multilingual-v3", "two", 1024))
      const typed = await client.send(
        new InvokeModelCommand({
          modelId: "cohere.embed-english-v3",
          body: JSON.stringify({ texts: ["one"], input_type: "search_query", embedding_types: ["int8", "ubinary"] })
        })
      )
      const typedBody = JSON.parse(new TextDecoder().decode(typed.body))
      strictEqual(typedBody.response_type, "embeddings_by_type")
      strictEqual(typedBody.embeddings.int8[0].length, 1024)
      strictEqual(typedBody.embeddings.ubinary[0].length, 128)
      const streamed = await client.send(
        new InvokeModelWithResponseStreamCommand({
          modelId: "amazon.titan-embed-text-v2:0",
          body: JSON.stringify({ inputText: "x" })
        })
      ).catch((e) => e)
      ok(streamed instanceof ValidationException)
      strictEqual(streamed.message, "The model is unsupported for streaming.")
    })
    deepStrictEqual(emulator.requests.map((request) => request.usage?.input), [3, undefined, 2, 1, undefined])
  })
})

Deno.test("@anthropic-ai/bedrock-sdk: messages.create and its stream through InvokeModel, SigV4-signed", async () => {
  await withEmulator({}, async (emulator) => {
    const anthropic = new AnthropicBedrock({
      awsAccessKey: BEDROCK_TEST_ACCESS_KEY_ID,
      awsSecretKey: BEDROCK_TEST_SECRET_ACCESS_KEY,
      awsRegion: "us-east-1",
      baseURL: `${emulator.url}/bedrock`,
      maxRetries: 0
    })
    const message = await anthropic.messages.create({
      model: CLAUDE,
      max_tokens: 100,
      messages: [{ role: "user", content: "Hello from the SDK" }]
    })
    deepStrictEqual(message.content, [{ type: "text", text: "Echo: Hello from the SDK" }])
    strictEqual(message.stop_reason, "end_turn")
    const streamed = await anthropic.messages.stream({
      model: PROFILE,
      max_tokens: 2048,
      thinking: { type: "enabled", budget_tokens: 1024 },
      tools: [{ name: "get_weather", description: "Weather", input_schema: weatherSchema }],
      messages: [{ role: "user", content: "weather?" }]
    }).finalMessage()
    const [thinking, use] = streamed.content
    if (thinking.type !== "thinking" || use.type !== "tool_use") throw new Error("expected thinking then tool_use")
    strictEqual(thinking.thinking, "Thinking about: weather?")
    deepStrictEqual(use.input, { location: "sample", unit: "celsius" })
    strictEqual(streamed.stop_reason, "tool_use")
    // Unlike the AWS SDK (`%3A`), this SDK leaves the model id's `:` unescaped in the path; both are signed alike.
    deepStrictEqual(emulator.requests.map((request) => request.path), [
      `/bedrock/model/${CLAUDE}/invoke`,
      `/bedrock/model/${PROFILE}/invoke-with-response-stream`
    ])
    for (const request of emulator.requests) {
      strictEqual(request.key, BEDROCK_TEST_ACCESS_KEY_ID)
      const body = request.body as Record<string, unknown>
      // The SDK moves its `anthropic-version` header into the body, and `model` and `stream` out of it.
      ok(typeof body.anthropic_version === "string")
      strictEqual("model" in body || "stream" in body, false)
    }
    // A Bedrock throttle reaches the SDK as its RateLimitError.
    emulator.setFaults([{ status: 429, times: 1 }])
    await rejects(
      anthropic.messages.create({ model: CLAUDE, max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
      (error: unknown) => error instanceof AnthropicBedrock.RateLimitError
    )
  })
})
