/**
 * Issue 14, item 7: the caller's output cap includes reasoning tokens. Turning
 * reasoning on never raises it: the thinking budget is fitted under it (or
 * left out when no budget fits), so the quota hold, sized for the cap, covers
 * what is sent. The emulator refuses what Anthropic refuses (`budget_tokens`
 * below 1024 or not below `max_tokens`).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { startGateway } from "../support/Gateway.ts"
import { everyChannelType, lastBodyTo, sdkClients } from "../support/EveryChannelType.ts"

Deno.test("output cap: reasoning on anthropic and gemini channels never raises the caller's cap", async (t) => {
  const gateway = await startGateway({ config: everyChannelType() })
  const { openai, google } = sdkClients(gateway)
  try {
    await t.step("chat max_completion_tokens 5000 with effort xhigh → anthropic max_tokens 5000", async () => {
      const answer = await openai.chat.completions.create({
        model: "m-claude",
        max_completion_tokens: 5000,
        reasoning_effort: "xhigh",
        messages: [{ role: "user", content: "Think, then say hi" }]
      })
      ok((answer.choices[0].message.content ?? "").length > 0)
      const sent = lastBodyTo(gateway, "/v1/messages")
      strictEqual(sent.max_tokens, 5000)
      deepStrictEqual(sent.thinking, { type: "enabled", budget_tokens: 2500 })
    })

    await t.step("generate-content maxOutputTokens 100 with a 1024 budget → anthropic, no thinking", async () => {
      const answer = await google.models.generateContent({
        model: "m-claude",
        contents: "Say hi",
        config: { maxOutputTokens: 100, thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } }
      })
      ok((answer.text ?? "").length > 0)
      const sent = lastBodyTo(gateway, "/v1/messages")
      strictEqual(sent.max_tokens, 100)
      deepStrictEqual(sent.thinking, { type: "disabled" })
    })

    await t.step("chat max_completion_tokens 3000 with effort high → gemini budget under the cap", async () => {
      await openai.chat.completions.create({
        model: "m-gemini",
        max_completion_tokens: 3000,
        reasoning_effort: "high",
        messages: [{ role: "user", content: "Say hi" }]
      })
      const config = lastBodyTo(gateway, ":generateContent").generationConfig as Record<string, unknown>
      strictEqual(config.maxOutputTokens, 3000)
      deepStrictEqual(config.thinkingConfig, { thinkingBudget: 1500, includeThoughts: true })
    })

    await t.step("no cap named: the held default is the ceiling, thinking included", async () => {
      await openai.chat.completions.create({
        model: "m-claude",
        reasoning_effort: "high",
        messages: [{ role: "user", content: "Say hi" }]
      })
      const sent = lastBodyTo(gateway, "/v1/messages")
      // default_max_tokens (4096) is what the hold was sized for and what is sent.
      strictEqual(sent.max_tokens, 4096)
      deepStrictEqual(sent.thinking, { type: "enabled", budget_tokens: 2048 })
    })
  } finally {
    await gateway.close()
  }
})
