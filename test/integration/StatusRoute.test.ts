/**
 * `GET /api/status`: anyone gets the version and one overall word; the
 * per-channel detail (names, key states, disable reasons) only to a caller
 * presenting the operator's `settings.status_token`.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { basicConfig, startGateway } from "../support/Gateway.ts"

const STATUS_TOKEN = "sk-test-status-operator-0001"

Deno.test("api/status: anonymous callers see no channel; the status token shows the channels", async () => {
  const gateway = await startGateway({
    config: (url) => ({ ...basicConfig(url), settings: { status_token: STATUS_TOKEN } })
  })
  const status = (authorization?: string) =>
    fetch(`${gateway.url}/api/status`, { headers: authorization === undefined ? {} : { authorization } })
  try {
    const anonymous = await status()
    strictEqual(anonymous.status, 200)
    const text = await anonymous.text()
    strictEqual(text.includes("emu-openai"), false, text)
    deepStrictEqual(JSON.parse(text), {
      success: true,
      message: "",
      data: { version: "0.1.0", system_name: "Sluice", status: "ok", oauth_providers: [], oauth_clients: [] }
    })

    const operator = await (await status(`Bearer ${STATUS_TOKEN}`)).json()
    strictEqual(operator.data.status, "ok")
    ok(Array.isArray(operator.data.channels))
    strictEqual(operator.data.channels[0].name, "emu-openai")

    for (const wrong of [`Bearer ${STATUS_TOKEN}x`, "Bearer sk-test-alice-0001", `Bearer ${"A".repeat(4000)}`]) {
      const refused = await status(wrong)
      strictEqual(refused.status, 401, wrong)
      const body = await refused.json()
      strictEqual(body.success, false)
      strictEqual(JSON.stringify(body).includes("emu-openai"), false)
    }
  } finally {
    await gateway.close()
  }
})

Deno.test("api/status: without a configured status token nobody sees the channels", async () => {
  const gateway = await startGateway({ config: (url) => basicConfig(url) })
  try {
    const response = await fetch(`${gateway.url}/api/status`, { headers: { authorization: "Bearer anything" } })
    strictEqual(response.status, 401)
    const anonymous = await (await fetch(`${gateway.url}/api/status`)).json()
    strictEqual(anonymous.data.channels, undefined)
    strictEqual(anonymous.data.status, "ok")
  } finally {
    await gateway.close()
  }
})
