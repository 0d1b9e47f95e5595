/**
 * The emulator's Vertex AI under `/vertex` (`emulator/Vertex.ts`), through the vendors' own clients:
 * `@google/genai` in Vertex mode with the service-account key the emulator issues (its `google-auth-library` makes
 * and signs the JWT bearer assertion and exchanges it at the emulator's token endpoint), and in express mode with an
 * API key; `@anthropic-ai/vertex-sdk`'s `AnthropicVertex` with a `GoogleAuth` over the same key, non-stream and
 * stream. Also: what the token endpoint refuses (an unknown key, a bad signature, a wrong grant type), a call
 * without valid credentials, a wrong project, and the recorded usage and key.
 *
 * `google-auth-library` ignores a key's `token_uri`: its token request goes to Google's
 * `https://oauth2.googleapis.com/token` (a constant, `GOOGLE_TOKEN_URL` in its `gtoken/getToken.js`), with that URL
 * as the assertion's `aud` (`gtoken/jwsSign.js`). The clients here are given a `fetchImplementation` (gaxios'
 * option, through `clientOptions.transporterOptions`) that sends that one URL to the emulator's endpoint instead.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import AnthropicVertex from "@anthropic-ai/vertex-sdk"
import { GoogleGenAI } from "@google/genai"
import { GoogleAuth } from "google-auth-library"
import { generateKeyPair, importPKCS8, SignJWT } from "jose"
import type { Emulator } from "../../emulator/Emulator.ts"
import { VERTEX_TEST_API_KEY, VERTEX_TEST_CLIENT_EMAIL, VERTEX_TEST_PROJECT } from "../../emulator/Vertex.ts"
import { pixelPng, weatherSchema, withEmulator } from "./Support.ts"

const SCOPE = "https://www.googleapis.com/auth/cloud-platform"

/** gaxios' fetch, with Google's token endpoint sent to the emulator's. */
const tokenFetch = (emulator: Emulator): typeof fetch => (input, init) => {
  const url = input instanceof Request ? input.url : String(input)
  return fetch(url === "https://oauth2.googleapis.com/token" ? `${emulator.url}/vertex/token` : input, init)
}

const googleAuthOptions = async (emulator: Emulator) => ({
  credentials: JSON.parse(await emulator.vertexServiceAccountKey()),
  scopes: [SCOPE],
  clientOptions: { transporterOptions: { fetchImplementation: tokenFetch(emulator) } }
})

const genai = async (emulator: Emulator, location = "us-central1") =>
  new GoogleGenAI({
    vertexai: true,
    project: VERTEX_TEST_PROJECT,
    location,
    googleAuthOptions: await googleAuthOptions(emulator),
    httpOptions: { baseUrl: `${emulator.url}/vertex` }
  })

const claude = async (emulator: Emulator) =>
  new AnthropicVertex({
    projectId: VERTEX_TEST_PROJECT,
    region: "us-east5",
    baseURL: `${emulator.url}/vertex/v1`,
    googleAuth: new GoogleAuth(await googleAuthOptions(emulator)),
    maxRetries: 0
  })

/** A token request for the emulator's endpoint with `assertion`. */
const tokenRequest = (emulator: Emulator, form: Record<string, string>) =>
  fetch(`${emulator.url}/vertex/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form)
  })

Deno.test("vertex emulator: @google/genai with the issued service-account key generates, streams and calls tools", async () => {
  await withEmulator({}, async (emulator) => {
    const client = await genai(emulator)
    const answer = await client.models.generateContent({ model: "gemini-2.5-flash", contents: "hello vertex" })
    strictEqual(answer.text, "Echo: hello vertex")
    ok((answer.usageMetadata?.promptTokenCount ?? 0) > 0)

    const words: Array<string> = []
    for await (
      const chunk of await client.models.generateContentStream({ model: "gemini-2.5-flash", contents: "one two" })
    ) {
      words.push(chunk.text ?? "")
    }
    strictEqual(words.join(""), "Echo: one two")

    const tool = await client.models.generateContent({
      model: "gemini-2.5-flash",
      contents: [{
        role: "user",
        parts: [{ text: "weather?" }, { inlineData: { mimeType: "image/png", data: pixelPng } }]
      }],
      config: { tools: [{ functionDeclarations: [{ name: "get_weather", parametersJsonSchema: weatherSchema }] }] }
    })
    strictEqual(tool.functionCalls?.[0]?.name, "get_weather")

    const token = emulator.requests.filter((request) => request.path === "/vertex/token")
    strictEqual(token.length, 1, "one token for the three calls")
    const calls = emulator.requests.filter((request) => request.path !== "/vertex/token")
    deepStrictEqual(calls.map((request) => request.path), [
      `/vertex/v1beta1/projects/${VERTEX_TEST_PROJECT}/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent`,
      `/vertex/v1beta1/projects/${VERTEX_TEST_PROJECT}/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent`,
      `/vertex/v1beta1/projects/${VERTEX_TEST_PROJECT}/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent`
    ])
    strictEqual(calls[1].query.alt, "sse")
    ok(
      calls.every((request) =>
        request.key === VERTEX_TEST_CLIENT_EMAIL && request.headers.authorization?.startsWith("Bearer ya29.")
      )
    )
    strictEqual(calls[0].usage?.input, answer.usageMetadata?.promptTokenCount)
  })
})

Deno.test("vertex emulator: @google/genai embeds through :predict, and the usage is the token counts", async () => {
  await withEmulator({}, async (emulator) => {
    const client = await genai(emulator)
    const embedded = await client.models.embedContent({
      model: "text-embedding-005",
      contents: ["first text", "second"],
      config: { outputDimensionality: 8, taskType: "RETRIEVAL_DOCUMENT" }
    })
    strictEqual(embedded.embeddings?.length, 2)
    strictEqual(embedded.embeddings?.[0].values?.length, 8)
    strictEqual(embedded.embeddings?.[0].statistics?.tokenCount, 3)
    const call = emulator.requests.find((request) => request.path.endsWith(":predict"))!
    deepStrictEqual((call.body as { instances: unknown }).instances, [
      { content: "first text", task_type: "RETRIEVAL_DOCUMENT" },
      { content: "second", task_type: "RETRIEVAL_DOCUMENT" }
    ])
    strictEqual(call.usage?.input, 3 + 2)
  })
})

Deno.test("vertex emulator: @google/genai in express mode with an API key", async () => {
  await withEmulator({}, async (emulator) => {
    const client = new GoogleGenAI({
      vertexai: true,
      apiKey: VERTEX_TEST_API_KEY,
      httpOptions: { baseUrl: `${emulator.url}/vertex` }
    })
    const answer = await client.models.generateContent({ model: "gemini-2.5-flash", contents: "express" })
    strictEqual(answer.text, "Echo: express")
    const [call] = emulator.requests
    strictEqual(call.path, "/vertex/v1beta1/publishers/google/models/gemini-2.5-flash:generateContent")
    strictEqual(call.key, VERTEX_TEST_API_KEY)
    const refused = new GoogleGenAI({
      vertexai: true,
      apiKey: "sk-test-not-a-vertex-key",
      httpOptions: { baseUrl: `${emulator.url}/vertex` }
    })
    await rejects(refused.models.generateContent({ model: "gemini-2.5-flash", contents: "no" }), /UNAUTHENTICATED/)
  })
})

Deno.test("vertex emulator: AnthropicVertex reaches rawPredict and streamRawPredict with a Google token", async () => {
  await withEmulator({}, async (emulator) => {
    const client = await claude(emulator)
    const message = await client.messages.create({
      model: "claude-sonnet-4-5@20250929",
      max_tokens: 64,
      messages: [{ role: "user", content: "hello claude" }]
    })
    deepStrictEqual(message.content, [{ type: "text", text: "Echo: hello claude" }])
    strictEqual(message.model, "claude-sonnet-4-5@20250929")

    const stream = client.messages.stream({
      model: "claude-sonnet-4-5@20250929",
      max_tokens: 64,
      tools: [{ name: "get_weather", input_schema: weatherSchema as never }],
      messages: [{ role: "user", content: "weather please" }]
    })
    const final = await stream.finalMessage()
    strictEqual(final.stop_reason, "tool_use")

    const calls = emulator.requests.filter((request) => request.path !== "/vertex/token")
    deepStrictEqual(calls.map((request) => request.path), [
      `/vertex/v1/projects/${VERTEX_TEST_PROJECT}/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict`,
      `/vertex/v1/projects/${VERTEX_TEST_PROJECT}/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict`
    ])
    for (const call of calls) {
      const body = call.body as Record<string, unknown>
      strictEqual("model" in body, false, "the SDK sends no model in the body")
      strictEqual(typeof body.anthropic_version, "string")
      strictEqual(call.key, VERTEX_TEST_CLIENT_EMAIL)
    }
    strictEqual((calls[1].body as Record<string, unknown>).stream, true)
    strictEqual(calls[0].usage?.input, message.usage.input_tokens)
    strictEqual(calls[1].usage?.output, final.usage.output_tokens)
  })
})

Deno.test("vertex emulator: the token endpoint refuses an unknown key, a forged signature, an old assertion and another grant", async () => {
  await withEmulator({}, async (emulator) => {
    const issued = JSON.parse(await emulator.vertexServiceAccountKey())
    deepStrictEqual(
      await (await fetch(`${emulator.url}/_emulator/vertex-key`)).json(),
      issued,
      "the control route's key"
    )
    const stranger = await generateKeyPair("RS256", { extractable: true })
    const now = Math.floor(Date.now() / 1000)
    const assertion = (
      key: Parameters<SignJWT["sign"]>[0],
      claims: Record<string, unknown>,
      kid = issued.private_key_id
    ) => new SignJWT({ scope: SCOPE, ...claims }).setProtectedHeader({ alg: "RS256", kid }).sign(key)

    const unknown = await tokenRequest(emulator, {
      grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
      assertion: await assertion(stranger.privateKey, {
        iss: "someone@else.iam.gserviceaccount.com",
        aud: issued.token_uri,
        iat: now,
        exp: now + 3600
      })
    })
    strictEqual(unknown.status, 400)
    deepStrictEqual(await unknown.json(), {
      error: "invalid_grant",
      error_description: "Invalid grant: account not found"
    })

    const forged = await tokenRequest(emulator, {
      grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
      assertion: await assertion(stranger.privateKey, {
        iss: issued.client_email,
        aud: issued.token_uri,
        iat: now,
        exp: now + 3600
      })
    })
    strictEqual(forged.status, 400)
    strictEqual((await forged.json()).error_description, "Invalid JWT Signature.")

    const own = await importPKCS8(issued.private_key, "RS256")
    const old = await tokenRequest(emulator, {
      grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
      assertion: await assertion(own, {
        iss: issued.client_email,
        aud: issued.token_uri,
        iat: now - 7200,
        exp: now - 3600
      })
    })
    strictEqual(old.status, 400)
    strictEqual((await old.json()).error, "invalid_grant")

    const other = await tokenRequest(emulator, { grant_type: "client_credentials" })
    strictEqual((await other.json()).error, "unsupported_grant_type")

    const good = await tokenRequest(emulator, {
      grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
      assertion: await assertion(own, { iss: issued.client_email, aud: issued.token_uri, iat: now, exp: now + 3600 })
    })
    const granted = await good.json()
    strictEqual(granted.token_type, "Bearer")
    strictEqual(granted.expires_in, 3599)
    ok(!JSON.stringify(emulator.requests).includes("eyJ"), "the recorded token requests hold no assertion")
  })
})

Deno.test("vertex emulator: a call without a valid token is UNAUTHENTICATED, another project PERMISSION_DENIED", async () => {
  await withEmulator({}, async (emulator) => {
    const path = (project: string) =>
      `${emulator.url}/vertex/v1/projects/${project}/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent`
    const body = JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] })
    const noToken = await fetch(path(VERTEX_TEST_PROJECT), {
      method: "POST",
      headers: { authorization: "Bearer ya29.not-issued", "content-type": "application/json" },
      body
    })
    strictEqual(noToken.status, 401)
    strictEqual((await noToken.json()).error.status, "UNAUTHENTICATED")
    const otherProject = await fetch(path("someone-elses-project"), {
      method: "POST",
      headers: { "x-goog-api-key": VERTEX_TEST_API_KEY, "content-type": "application/json" },
      body
    })
    strictEqual(otherProject.status, 403)
    strictEqual((await otherProject.json()).error.status, "PERMISSION_DENIED")
    const noRole = await fetch(path(VERTEX_TEST_PROJECT), {
      method: "POST",
      headers: { "x-goog-api-key": VERTEX_TEST_API_KEY, "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ parts: [{ text: "hi" }] }] })
    })
    strictEqual(noRole.status, 400, "Vertex AI requires contents[].role")
    await noRole.body?.cancel()
  })
})
