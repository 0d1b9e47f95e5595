/**
 * The console's channel form for `type: azure`, in Chromium: choosing the type shows the API version field and the
 * key formats (an API key, or `entra:<token>`); a bad API version is said next to the form and nothing is saved;
 * `v1` is saved as `settings.api_version`, and a chat through the new channel reaches the emulator's Azure v1 API
 * with the key as `api-key`.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { chromium } from "playwright-core"
import { CHROMIUM, pageCall } from "../support/Chromium.ts"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"

const UPSTREAM_KEY = "sk-test-upstream-azure-console-1"

Deno.test("console: an azure channel with its API version field and key formats", async () => {
  const gateway = await startGateway({ config: (url) => basicConfig(url) })
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
  try {
    const page = await browser.newPage()
    await page.goto(gateway.url)
    await page.getByLabel("Username").fill("root")
    await page.getByLabel("Password").fill(ROOT_PASSWORD)
    await page.getByRole("button", { name: "Sign in", exact: true }).click()
    await page.getByRole("heading", { name: "Dashboard" }).waitFor()
    await page.getByRole("link", { name: "Channels" }).click()

    const form = page.getByRole("form", { name: "Add a channel" })
    const versionLabel = /^API version/
    strictEqual(await form.getByLabel(versionLabel).count(), 0, "no API version field on an openai channel")
    await form.getByLabel("Channel name").fill("azure-console")
    await form.getByLabel("Type").selectOption("azure")
    await form.getByLabel("Base URL").fill(`${gateway.emulator.url}/azure`)
    await form.getByLabel("Models, comma-separated").fill("gpt-test")
    await form.getByLabel(/^Model mapping/).fill("gpt-test=gpt-4o-console")
    ok(
      (await form.getByLabel(/^Model mapping/).getAttribute("name")) === "model_mapping" &&
        (await form.getByText("the upstream model is the deployment name").count()) === 1,
      "the mapping names the deployment"
    )
    const keys = form.getByLabel(/^Keys, one a line; an azure key is an API key/)
    ok((await form.getByText("entra:<token>").count()) === 1, "the Entra key format is explained")
    await keys.fill(UPSTREAM_KEY)
    await form.getByLabel(versionLabel).fill("2024-10")
    await form.getByRole("button", { name: "Add channel" }).click()
    ok((await form.getByRole("alert").textContent())?.includes("API version"), "a bad API version is said")
    strictEqual(
      ((await pageCall(page, "GET", "/api/channel/")).json.data as Array<{ name: string }>).some((channel) =>
        channel.name === "azure-console"
      ),
      false,
      "nothing saved"
    )

    await form.getByLabel(versionLabel).fill("v1")
    await form.getByRole("button", { name: "Add channel" }).click()
    await page.getByRole("status").filter({ hasText: "Saved channel azure-console." }).waitFor()
    const listed = (await pageCall(page, "GET", "/api/channel/")).json.data as Array<
      { name: string; type: string; settings: Record<string, unknown> }
    >
    const saved = listed.find((channel) => channel.name === "azure-console")
    deepStrictEqual({ type: saved?.type, settings: saved?.settings }, {
      type: "azure",
      settings: { api_version: "v1" }
    })

    // Only the new channel serves the model now.
    const disabled = await pageCall(page, "PUT", "/api/channel/", {
      id: (listed.find((channel) => channel.name === "emu-openai") as unknown as { id: number }).id,
      enabled: false
    })
    strictEqual(disabled.json.success, true, disabled.json.message)
    const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-test-alice-0001", maxRetries: 0 })
    const chat = await openai.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "hello console" }]
    })
    strictEqual(chat.choices[0].message.content, "Echo: hello console")
    const request = gateway.emulator.requests.filter((recorded) => recorded.method === "POST").at(-1)
    strictEqual(request?.path, "/azure/openai/v1/chat/completions")
    strictEqual(request?.headers["api-key"], UPSTREAM_KEY)
    strictEqual((request?.body as Record<string, unknown>).model, "gpt-4o-console")
  } finally {
    await browser.close()
    await gateway.close()
  }
})
