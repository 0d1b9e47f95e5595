/**
 * Issue 14, item 9 (seed): chat `seed` is any JSON number with an integer
 * value, however large (the spec types it as a number; OpenAI takes an
 * integer); a fractional seed is a 400 naming `seed` and saying the upstream
 * takes an integer, before any upstream call or charge. The emulator refuses a
 * non-integer seed as OpenAI does.
 */
import { ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { startGateway } from "../support/Gateway.ts"
import { everyChannelType, lastBodyTo, sdkClients } from "../support/EveryChannelType.ts"

Deno.test("chat seed: any integer value passes on every path; a fraction is a 400 naming seed", async (t) => {
  const gateway = await startGateway({ config: everyChannelType() })
  const { openai } = sdkClients(gateway)
  const messages = [{ role: "user" as const, content: "hi" }]
  try {
    await t.step("2^60 (beyond 2^53) reaches the openai channel as sent", async () => {
      const answer = await openai.chat.completions.create({ model: "m-chat", seed: 2 ** 60, messages })
      strictEqual(answer.choices[0].message.content, "Echo: hi")
      strictEqual(lastBodyTo(gateway, "/v1/chat/completions").seed, 2 ** 60)
    })

    await t.step("a negative integer reaches a gemini channel as generationConfig.seed", async () => {
      await openai.chat.completions.create({ model: "m-gemini", seed: -42, messages })
      strictEqual((lastBodyTo(gateway, ":generateContent").generationConfig as { seed: number }).seed, -42)
    })

    await t.step("1.5 is refused before any upstream call", async () => {
      const before = gateway.emulator.requests.length
      const error = await openai.chat.completions.create({ model: "m-chat", seed: 1.5, messages })
        .catch((failure) => failure)
      ok(error instanceof OpenAI.BadRequestError)
      const body = error.error as { param: string; message: string; code: string }
      strictEqual(body.param, "seed")
      ok(body.message.includes("integer"), body.message)
      strictEqual(gateway.emulator.requests.length, before)
    })
  } finally {
    await gateway.close()
  }
})
