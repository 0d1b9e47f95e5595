/**
 * Issue 14, item 9 (obfuscation): a translated chat completions or Responses
 * stream pads its delta events with an `obfuscation` field of random
 * characters, as OpenAI's streams do by default, and leaves it out when the
 * caller sends `stream_options.include_obfuscation: false` (which also reaches
 * an OpenAI upstream in its own `stream_options`).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { PAD_BLOCK } from "../../src/formats/openai/shared/Obfuscation.ts"
import { startGateway } from "../support/Gateway.ts"
import { everyChannelType, lastBodyTo, sdkClients } from "../support/EveryChannelType.ts"

type Padded = { readonly delta?: unknown; readonly obfuscation?: unknown }

/** Checks every padded delta: random letters and digits bringing the delta's length to a multiple of PAD_BLOCK. */
const checkPadding = (text: string, obfuscation: unknown) => {
  ok(typeof obfuscation === "string" && /^[A-Za-z0-9]+$/.test(obfuscation), `padding ${String(obfuscation)}`)
  strictEqual((text.length + obfuscation.length) % PAD_BLOCK, 0)
}

Deno.test("stream obfuscation: translated streams pad delta events unless the caller turns it off", async (t) => {
  const gateway = await startGateway({ config: everyChannelType() })
  const { openai } = sdkClients(gateway)
  try {
    await t.step("responses → anthropic: padded by default, not when include_obfuscation is false", async () => {
      for (const include of [undefined, false]) {
        const stream = await openai.responses.create({
          model: "m-claude",
          input: "pad me please",
          stream: true,
          ...(include === undefined ? {} : { stream_options: { include_obfuscation: include } })
        })
        let text = ""
        let deltas = 0
        for await (const event of stream) {
          if (event.type !== "response.output_text.delta") continue
          deltas += 1
          text += event.delta
          const padded = event as unknown as Padded
          if (include === undefined) checkPadding(event.delta, padded.obfuscation)
          else strictEqual("obfuscation" in padded, false)
        }
        ok(deltas > 1)
        strictEqual(text, "Echo: pad me please")
        strictEqual("stream_options" in lastBodyTo(gateway, "/v1/messages"), false, "anthropic has no such option")
      }
    })

    await t.step("chat → gemini: chunks padded by default, not when include_obfuscation is false", async () => {
      for (const include of [undefined, false]) {
        const stream = await openai.chat.completions.create({
          model: "m-gemini",
          messages: [{ role: "user", content: "pad me please" }],
          stream: true,
          ...(include === undefined ? {} : { stream_options: { include_obfuscation: include } })
        })
        let text = ""
        for await (const chunk of stream) {
          const content = chunk.choices[0]?.delta.content
          if (typeof content !== "string" || content === "") continue
          text += content
          if (include === undefined) checkPadding(content, chunk.obfuscation)
          else strictEqual(chunk.obfuscation, undefined)
        }
        strictEqual(text, "Echo: pad me please")
      }
    })

    await t.step("responses → chat channel: the caller's choice reaches the OpenAI upstream", async () => {
      const stream = await openai.responses.create({
        model: "m-chat",
        input: "hi",
        stream: true,
        stream_options: { include_obfuscation: false }
      })
      for await (const event of stream) {
        if (event.type === "response.output_text.delta") strictEqual("obfuscation" in event, false)
      }
      deepStrictEqual(lastBodyTo(gateway, "/v1/chat/completions").stream_options, {
        include_usage: true,
        include_obfuscation: false
      })
    })
  } finally {
    await gateway.close()
  }
})
