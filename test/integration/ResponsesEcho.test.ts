/**
 * Issue 14, item 8: the Responses object a translated path answers repeats the
 * request's settings, as OpenAI's API does (and as the emulator's Responses
 * endpoint does on the same-format path), in JSON and in the streamed
 * `response.created` and `response.completed` objects.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import type OpenAI from "openai"
import { startGateway } from "../support/Gateway.ts"
import { everyChannelType, lastBodyTo, sdkClients } from "../support/EveryChannelType.ts"

const tools: Array<OpenAI.Responses.Tool> = [{
  type: "function",
  name: "lookup",
  description: "Looks a word up",
  parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
  strict: true
}]

const settings = {
  instructions: "Be brief.",
  max_output_tokens: 3000,
  tools,
  tool_choice: "none" as const,
  temperature: 0.5,
  top_p: 0.9,
  parallel_tool_calls: false,
  text: { format: { type: "text" as const }, verbosity: "low" as const },
  truncation: "auto" as const,
  store: false,
  metadata: { team: "search", run: "7" },
  safety_identifier: "user-hash-42"
}

/** The fields of a Response object that repeat the request. */
const echoed = (response: OpenAI.Responses.Response) => ({
  instructions: response.instructions,
  max_output_tokens: response.max_output_tokens,
  tools: response.tools,
  tool_choice: response.tool_choice,
  temperature: response.temperature,
  top_p: response.top_p,
  parallel_tool_calls: response.parallel_tool_calls,
  text: response.text,
  truncation: response.truncation,
  store: (response as unknown as { store: boolean }).store,
  metadata: response.metadata,
  safety_identifier: response.safety_identifier,
  previous_response_id: response.previous_response_id,
  reasoning: response.reasoning
})

const paths: Record<string, string> = {
  "m-claude": "/v1/messages",
  "m-gemini": ":generateContent",
  "m-chat": "/v1/chat/completions"
}

const expected = (previous: string | null) => ({
  ...settings,
  previous_response_id: previous,
  reasoning: { effort: "low", summary: null }
})

Deno.test("responses: a translated answer echoes the request's settings, JSON and stream", async (t) => {
  const gateway = await startGateway({ config: everyChannelType() })
  const { openai } = sdkClients(gateway)
  try {
    for (const model of ["m-claude", "m-gemini", "m-chat"]) {
      await t.step(`${model}: JSON`, async () => {
        const first = await openai.responses.create({ model, input: "first" })
        strictEqual(echoed(first).store, true, "the default when not sent")
        deepStrictEqual(first.tools, [])
        const answer = await openai.responses.create({
          model,
          input: "say hi",
          previous_response_id: first.id,
          reasoning: { effort: "low" },
          ...settings
        })
        strictEqual(answer.output_text, "Echo: say hi")
        deepStrictEqual(echoed(answer), expected(first.id))
        // The upstream got the settings in its own form (the cap among them), the earlier turn too.
        const sent = JSON.stringify(lastBodyTo(gateway, paths[model]))
        for (const piece of ["3000", "Be brief.", "lookup", "first"]) ok(sent.includes(piece), `${model} got ${piece}`)
      })

      await t.step(`${model}: stream`, async () => {
        const stream = await openai.responses.create({
          model,
          input: "say hi",
          reasoning: { effort: "low" },
          stream: true,
          ...settings
        })
        const objects: Array<OpenAI.Responses.Response> = []
        for await (const event of stream) {
          if (event.type === "response.created" || event.type === "response.completed") objects.push(event.response)
        }
        strictEqual(objects.length, 2)
        for (const object of objects) deepStrictEqual(echoed(object), expected(null))
      })
    }

    await t.step("the same-format path answers the vendor's own echo: the same values", async () => {
      const answer = await openai.responses.create({
        model: "m-resp",
        input: "say hi",
        reasoning: { effort: "low" },
        ...settings
      })
      const sent = lastBodyTo(gateway, "/v1/responses")
      strictEqual(sent.store, false)
      const vendor = echoed(answer)
      const ours = expected(null)
      for (
        const key of ["instructions", "max_output_tokens", "tools", "tool_choice", "temperature", "top_p", "store"]
      ) {
        deepStrictEqual(vendor[key as keyof typeof vendor], ours[key as keyof typeof ours], key)
      }
    })
  } finally {
    await gateway.close()
  }
})
