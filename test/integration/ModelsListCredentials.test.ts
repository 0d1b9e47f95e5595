/**
 * Issue 14, item 9 (models list): `/v1/models` and `/v1beta/models` answer
 * whichever credential style the caller's SDK sends (`Authorization: Bearer`,
 * `x-api-key` with `anthropic-version`, `x-goog-api-key`, `?key=`), in the
 * shape that SDK reads, through each official SDK's models list call; a bad
 * key is refused in that SDK's error shape. No upstream is called.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import Anthropic from "@anthropic-ai/sdk"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import { startGateway } from "../support/Gateway.ts"
import { everyChannelType, sdkClients } from "../support/EveryChannelType.ts"

const MODELS = ["m-azure", "m-bedrock", "m-chat", "m-claude", "m-deepseek", "m-gemini", "m-resp", "m-vertex"]

const sorted = (ids: ReadonlyArray<string>) => [...ids].sort()

Deno.test("models list: every SDK's own call and credentials get the key's models in its shape", async (t) => {
  const gateway = await startGateway({ config: everyChannelType() })
  const { openai, anthropic, google } = sdkClients(gateway)
  try {
    await t.step("openai: Bearer", async () => {
      const ids: Array<string> = []
      for await (const model of openai.models.list()) ids.push(model.id)
      deepStrictEqual(sorted(ids), MODELS)
    })

    await t.step("anthropic: x-api-key and anthropic-version", async () => {
      const models: Array<Anthropic.ModelInfo> = []
      for await (const model of anthropic.models.list()) models.push(model)
      deepStrictEqual(sorted(models.map((model) => model.id)), MODELS)
      strictEqual(models[0].type, "model")
      ok(!Number.isNaN(Date.parse(models[0].created_at)))
    })

    await t.step("google: x-goog-api-key, API version v1 (the SDK's default) and v1beta", async () => {
      for (
        const client of [
          google,
          new GoogleGenAI({ apiKey: "sk-test-alice-0001", httpOptions: { baseUrl: gateway.url } })
        ]
      ) {
        const names: Array<string> = []
        for await (const model of await client.models.list()) names.push(model.name ?? "")
        deepStrictEqual(sorted(names), MODELS.map((id) => `models/${id}`))
      }
    })

    await t.step("raw HTTP: ?key= on both paths", async () => {
      for (const path of ["/v1/models", "/v1beta/models"]) {
        const response = await fetch(`${gateway.url}${path}?key=sk-test-alice-0001`)
        strictEqual(response.status, 200)
        const body = await response.json() as { models: Array<{ name: string }> }
        deepStrictEqual(sorted(body.models.map((model) => model.name)), MODELS.map((id) => `models/${id}`))
      }
    })

    await t.step("a bad key: each SDK's own authentication error", async () => {
      const badOpenAi = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-test-nobody", maxRetries: 0 })
      ok(await badOpenAi.models.list().catch((error) => error) instanceof OpenAI.AuthenticationError)
      const badAnthropic = new Anthropic({ baseURL: gateway.url, apiKey: "sk-test-nobody", maxRetries: 0 })
      const refused = await badAnthropic.models.list().catch((error) => error)
      ok(refused instanceof Anthropic.AuthenticationError)
      strictEqual((refused.error as { type: string }).type, "error")
      const badGoogle = new GoogleGenAI({ apiKey: "sk-test-nobody", httpOptions: { baseUrl: gateway.url } })
      const googleError = await badGoogle.models.list().catch((error) => error)
      strictEqual((googleError as { status: number }).status, 401)
      ok(String((googleError as Error).message).includes("UNAUTHENTICATED"))
    })

    strictEqual(gateway.emulator.requests.length, 0, "no upstream call")
  } finally {
    await gateway.close()
  }
})
