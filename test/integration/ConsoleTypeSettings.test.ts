/**
 * The channel form's per-type settings in Chromium: a type's own fields (bedrock's region and API, vertex's project
 * and location, azure's API version) show only while that type is chosen (and the openai-only Responses switches only
 * on openai), each with its help and its bootstrap name;
 * a field's value is written into the settings JSON (the advanced view) and the JSON's edit shows in the field; a
 * missing required field or a value the server would refuse is said next to the form, naming the field, and nothing
 * is saved; a bedrock channel saved from the fields has those settings, shows them again when edited, and serves a
 * chat from the `openai` SDK through the emulator's InvokeModel, as `bedrock_api: invoke` asks.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { chromium, type Locator } from "playwright-core"
import { BEDROCK_TEST_CHANNEL_KEY } from "../../emulator/BedrockAuth.ts"
import { CHROMIUM, pageCall } from "../support/Chromium.ts"
import { basicConfig, ROOT_PASSWORD, startGateway } from "../support/Gateway.ts"

const CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"

/** `field`'s value once the page has read the JSON's edit (a render later), or its last value after two seconds. */
const valueOnce = async (field: Locator, expected: string): Promise<string> => {
  for (let tries = 0; tries < 40 && (await field.inputValue()) !== expected; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return field.inputValue()
}

Deno.test("console: a channel type's own settings as fields that round-trip through the settings JSON", async () => {
  const gateway = await startGateway({ config: (url) => basicConfig(url) })
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
  try {
    const page = await browser.newPage()
    const problems: Array<string> = []
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`))
    await page.goto(gateway.url)
    await page.getByLabel("Username").fill("root")
    await page.getByLabel("Password").fill(ROOT_PASSWORD)
    await page.getByRole("button", { name: "Sign in", exact: true }).click()
    await page.getByRole("heading", { name: "Dashboard" }).waitFor()
    await page.getByRole("link", { name: "Channels" }).click()

    const form = page.getByRole("form", { name: "Add a channel" })
    const json = form.getByLabel(/^Settings \(JSON/)
    const region = form.getByLabel("AWS region (region)")
    const bedrockApi = form.getByLabel("Bedrock API (bedrock_api)")
    const project = form.getByLabel("Google Cloud project (project)")
    strictEqual(await region.count(), 0, "no bedrock field on an openai channel")
    const responsesSwitch = form.getByLabel("Responses API (responses_api)")
    strictEqual(await responsesSwitch.count(), 1, "an openai channel has the Responses switches")
    strictEqual(await project.count(), 0, "no vertex field on an openai channel")

    // Vertex: project required, checked as the server checks it; location optional.
    await form.getByLabel("Type").selectOption("vertex")
    await form.getByText("Settings of a vertex channel").waitFor()
    strictEqual(await responsesSwitch.count(), 0, "the openai-only switches are not offered on vertex")
    ok((await form.getByText("The project's id or number.").count()) === 1, "the project's help is shown")
    await form.getByLabel("Channel name").fill("vertex-form")
    await form.getByLabel("Models, comma-separated").fill("gpt-test")
    await form.getByLabel(/^Keys, one a line/).fill("sk-test-vertex-api-key-1")
    await project.fill("has space")
    await form.getByLabel("Location (location)").fill("europe-west4")
    await page.getByText(/^Settings \(JSON, the advanced view/).click()
    deepStrictEqual(JSON.parse(await json.inputValue()), { project: "has space", location: "europe-west4" })
    await form.getByRole("button", { name: "Add channel" }).click()
    const vertexRefusal = await form.getByRole("alert").textContent()
    ok(vertexRefusal?.includes("Google Cloud project (project)"), `the field is named: ${vertexRefusal}`)
    await project.fill("")
    await form.getByRole("button", { name: "Add channel" }).click()
    ok((await form.getByRole("alert").textContent())?.includes("is required"), "a missing project is said")

    // Bedrock: the region and API written into the JSON, and the JSON's edit shown in the fields.
    await form.getByLabel("Type").selectOption("bedrock")
    strictEqual(await project.count(), 0, "the vertex fields are gone with the type")
    await form.getByText("Settings of a bedrock channel").waitFor()
    await form.getByLabel("Channel name").fill("bedrock-form")
    await form.getByLabel("Base URL").fill(`${gateway.emulator.url}/bedrock`)
    await form.getByLabel(/^Model mapping/).fill(`gpt-test=${CLAUDE}`)
    await form.getByLabel(/^Keys, one a line/).fill(BEDROCK_TEST_CHANNEL_KEY)
    await region.fill("us-east-1")
    await bedrockApi.selectOption("invoke")
    const written = JSON.parse(await json.inputValue())
    deepStrictEqual([written.region, written.bedrock_api], ["us-east-1", "invoke"], "the fields write the JSON")
    await json.fill(JSON.stringify({ ...written, region: "nowhere" }, null, 2))
    strictEqual(await valueOnce(region, "nowhere"), "nowhere", "the JSON's edit shows in the field")
    await form.getByRole("button", { name: "Add channel" }).click()
    const regionRefusal = await form.getByRole("alert").textContent()
    ok(regionRefusal?.includes("AWS region (region)"), `the bad region is said: ${regionRefusal}`)
    const before = (await pageCall(page, "GET", "/api/channel/")).json.data as Array<{ name: string }>
    strictEqual(before.some((channel) => channel.name.endsWith("-form")), false, "nothing saved")
    await json.fill(JSON.stringify({ region: "us-east-1", bedrock_api: "invoke", auto_disable: true }, null, 2))
    strictEqual(await valueOnce(region, "us-east-1"), "us-east-1")
    strictEqual(await valueOnce(bedrockApi, "invoke"), "invoke")
    await form.getByRole("button", { name: "Add channel" }).click()
    await page.getByRole("status").filter({ hasText: "Saved channel bedrock-form." }).waitFor()
    const listed = (await pageCall(page, "GET", "/api/channel/")).json.data as Array<
      { id: number; name: string; type: string; settings: Record<string, unknown> }
    >
    const saved = listed.find((channel) => channel.name === "bedrock-form")
    deepStrictEqual({ type: saved?.type, settings: saved?.settings }, {
      type: "bedrock",
      settings: { region: "us-east-1", bedrock_api: "invoke", auto_disable: true }
    })

    // Edited: the saved settings show in the type's fields.
    await page.getByRole("button", { name: "Edit bedrock-form" }).click()
    const change = page.getByRole("form", { name: "Change channel bedrock-form" })
    strictEqual(await change.getByLabel("AWS region (region)").inputValue(), "us-east-1")
    strictEqual(await change.getByLabel("Bedrock API (bedrock_api)").inputValue(), "invoke")

    // Only the new channel serves gpt-test: a chat through the openai SDK reaches Bedrock's InvokeModel.
    const openaiChannel = listed.find((channel) => channel.name === "emu-openai")
    const disabled = await pageCall(page, "PUT", "/api/channel/", { id: openaiChannel?.id, enabled: false })
    strictEqual(disabled.json.success, true, disabled.json.message)
    const chat = await new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-test-alice-0001", maxRetries: 0 })
      .chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hello bedrock form" }] })
    ok(chat.choices[0].message.content?.includes("hello bedrock form"), chat.choices[0].message.content ?? "")
    const request = gateway.emulator.requests.filter((recorded) => recorded.method === "POST").at(-1)
    ok(request?.path.startsWith("/bedrock/model/") && request.path.endsWith("/invoke"), request?.path ?? "no request")
    deepStrictEqual(problems, [])
  } finally {
    await browser.close()
    await gateway.close()
  }
})
