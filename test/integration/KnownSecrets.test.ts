/**
 * Vendor text never carries the channel's own secrets (issue 28, item 7):
 * a key in a shape no pattern knows (Ark's UUID-form keys, a short key) and a
 * header token, echoed back by a vendor's error, are masked by value in the
 * caller's answer (through the official SDK), in the usage log rows and in
 * every log line.
 */
import { ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { basicConfig, startGateway } from "../support/Gateway.ts"

const UUID_KEY = "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f"
const HEADER_TOKEN = "tok-short-77"

Deno.test("known secrets 7: a UUID-form key and a header token echoed by a vendor are masked by value", async () => {
  const gateway = await startGateway({
    store: "postgres",
    config: (url) =>
      basicConfig(url, {
        channels: [{
          name: "uuid-keyed",
          type: "openai",
          base_url: url,
          keys: [UUID_KEY],
          models: ["gpt-test"],
          settings: { headers: { "x-proxy-token": HEADER_TOKEN } }
        }]
      })
  })
  try {
    gateway.emulator.setFaults([{
      match: { key: UUID_KEY },
      status: 400,
      echo: "key",
      message: `Incorrect API key provided: {echo}; the proxy token ${HEADER_TOKEN} is not valid.`
    }])
    const client = new OpenAI({ apiKey: "sk-test-alice-0001", baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    let message = ""
    let status = 0
    try {
      await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
    } catch (error) {
      message = (error as { message: string }).message
      status = (error as { status: number }).status
    }
    strictEqual(status, 400, message)
    ok(message.includes("Incorrect API key provided"), message)
    ok(!message.includes(UUID_KEY) && !message.includes(HEADER_TOKEN), message)
    ok(message.includes("[redacted]"), message)

    await new Promise((resolve) => setTimeout(resolve, 300))
    const rows = await gateway.query<{ row: string }>("SELECT row_to_json(u)::text AS row FROM usage_logs u")
    ok(rows.length > 0, "the failure is logged")
    for (const { row } of rows) ok(!row.includes(UUID_KEY) && !row.includes(HEADER_TOKEN), row)
    for (const line of gateway.logs) ok(!line.includes(UUID_KEY) && !line.includes(HEADER_TOKEN), line)
  } finally {
    await gateway.close()
  }
})
