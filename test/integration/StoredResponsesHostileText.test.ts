/**
 * Stored Responses conversations keep any text a caller may send: JSON allows
 * `\u0000` and lone surrogates in strings, PostgreSQL's JSONB refuses both. A
 * conversation holding them is stored, continued with `previous_response_id`
 * and reaches the upstream exactly as sent, on PGlite and on PostgreSQL,
 * through the official `openai` SDK.
 */
import { Result } from "effect"
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { parseBootstrap } from "../../src/config/BootstrapFile.ts"
import { restoreFromJsonb, storableInJsonb } from "../../src/services/ResponseStore.ts"
import { startGateway, type Store } from "../support/Gateway.ts"

const KEY = "sk-test-hostile-0001"

const config = (emulatorUrl: string) => {
  const parsed = parseBootstrap(
    JSON.stringify({
      groups: { default: { ratio: 1 } },
      models: { "m-openai": { input: 1, output: 2 }, "m-anthropic": { input: 1, output: 2 } },
      channels: [
        {
          name: "openai",
          type: "openai",
          base_url: emulatorUrl,
          keys: ["sk-test-up"],
          models: ["m-openai"],
          settings: { responses_api: true }
        },
        { name: "anthropic", type: "anthropic", base_url: emulatorUrl, keys: ["sk-test-up"], models: ["m-anthropic"] }
      ],
      users: [{ username: "alice", group: "default", quota: 50_000_000, tokens: [{ name: "main", key: KEY }] }]
    }),
    "hostile.json"
  )
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

/** Strings JSON allows and JSONB refuses, plus the store's own escape character and a valid pair. */
const HOSTILE = ["a\u0000b", "lone high \ud800 here", "lone low \udc00", "\ue000 escape char \ue000s", "pair 😀 ok"]

/** Every string value anywhere in `value`. */
const stringsOf = (value: unknown): Array<string> =>
  typeof value === "string"
    ? [value]
    : Array.isArray(value)
    ? value.flatMap(stringsOf)
    : typeof value === "object" && value !== null
    ? Object.values(value).flatMap(stringsOf)
    : []

Deno.test("ResponseStore: the JSONB escape round-trips every string exactly", () => {
  const value = [{ role: "user", content: HOSTILE.map((text) => ({ type: "text", text })), [`k\u0000\ud800`]: 1 }]
  value.push(JSON.parse('{"__proto__": {"text": "\\u0000"}}'))
  const stored = storableInJsonb(value)
  const text = JSON.stringify(stored)
  ok(!text.includes("\\u0000") && !/\\ud[89a-f]/i.test(text), "nothing JSONB refuses is left")
  deepStrictEqual(restoreFromJsonb(JSON.parse(text)), value)
  // Rows written before the escape existed (a bare array) load as they are.
  deepStrictEqual(restoreFromJsonb([{ role: "user", content: [{ type: "text", text: "old \ue000s" }] }]), [
    { role: "user", content: [{ type: "text", text: "old \ue000s" }] }
  ])
})

for (const store of ["pglite", "postgres"] as const satisfies ReadonlyArray<Store>) {
  Deno.test(`responses (${store}): NUL and lone surrogates are stored, continued and sent upstream exactly`, async () => {
    const gateway = await startGateway({ config, store })
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 })
    try {
      for (const model of ["m-openai", "m-anthropic"]) {
        const first = await client.responses.create({ model, input: HOSTILE.join(" | ") })
        strictEqual(first.status, "completed")
        const second = await client.responses.create({ model, input: "next", previous_response_id: first.id })
        strictEqual(second.output_text, "Echo: next")
        const sent = stringsOf(gateway.emulator.requests.at(-1)!.body)
        ok(sent.some((text) => text === HOSTILE.join(" | ")), `${model}: the first turn reached the upstream exactly`)
        ok(sent.some((text) => text.includes("Echo: a\u0000b")), `${model}: the stored answer kept its NUL`)
        const third = await client.responses.create({ model, input: "again", previous_response_id: second.id })
        strictEqual(third.output_text, "Echo: again")
        const again = stringsOf(gateway.emulator.requests.at(-1)!.body)
        ok(again.some((text) => text === HOSTILE.join(" | ")), `${model}: two hops later the text is unchanged`)
      }
    } finally {
      await gateway.close()
    }
  })
}
