import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict"
import { FunctionCallingConfigMode, GoogleGenAI } from "@google/genai"
import { pixelPng, readSse, weatherSchema, withEmulator } from "./Support.ts"

const client = (url: string, apiKey = "gm-test") => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: url } })

const weatherDeclaration = {
  name: "get_weather",
  description: "Weather for a city",
  parametersJsonSchema: weatherSchema
}

Deno.test("gemini: generateContent text with usage, safety ratings and ids", async () => {
  await withEmulator({}, async (emulator) => {
    const response = await client(emulator.url).models.generateContent({
      model: "gemini-2.5-flash",
      contents: "Hello Gemini",
      config: { systemInstruction: "Be brief." }
    })
    strictEqual(response.text, "Echo: Hello Gemini")
    const candidate = response.candidates![0]
    strictEqual(candidate.finishReason, "STOP")
    strictEqual(candidate.content?.role, "model")
    strictEqual(candidate.safetyRatings?.[0].probability, "NEGLIGIBLE")
    strictEqual(response.usageMetadata?.candidatesTokenCount, 3)
    strictEqual(
      response.usageMetadata?.totalTokenCount,
      response.usageMetadata!.promptTokenCount! + response.usageMetadata!.candidatesTokenCount!
    )
    strictEqual(response.modelVersion, "gemini-2.5-flash")
    ok(response.responseId !== undefined)
    strictEqual(emulator.requests[0].key, "gm-test")
  })
})

Deno.test("gemini: key from ?key= query and the v1beta path", async () => {
  await withEmulator({ validKeys: ["qk"] }, async (emulator) => {
    const response = await fetch(emulator.url + "/v1beta/models/gemini-2.5-pro:generateContent?key=qk", {
      method: "POST",
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] })
    })
    strictEqual(response.status, 200)
    strictEqual(emulator.requests[0].key, "qk")
    const denied = await fetch(emulator.url + "/v1beta/models/gemini-2.5-pro:generateContent?key=nope", {
      method: "POST",
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] })
    })
    strictEqual(denied.status, 401)
    strictEqual((await denied.json()).error.status, "UNAUTHENTICATED")
  })
})

Deno.test("gemini: SSE stream with thoughts, thoughtSignature and final usage", async () => {
  await withEmulator({}, async (emulator) => {
    const stream = await client(emulator.url).models.generateContentStream({
      model: "gemini-2.5-flash",
      contents: "why blue",
      config: { thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 } }
    })
    let thoughts = ""
    let text = ""
    let signature: string | undefined
    let finish: string | undefined
    let thoughtsTokens: number | undefined
    for await (const chunk of stream) {
      for (const part of chunk.candidates?.[0]?.content?.parts ?? []) {
        if (part.thought) thoughts += part.text ?? ""
        else text += part.text ?? ""
        signature = part.thoughtSignature ?? signature
      }
      finish = chunk.candidates?.[0]?.finishReason ?? finish
      thoughtsTokens = chunk.usageMetadata?.thoughtsTokenCount ?? thoughtsTokens
    }
    strictEqual(thoughts, "Thinking about: why blue")
    strictEqual(text, "Echo: why blue")
    ok(signature !== undefined && signature.length > 0)
    strictEqual(finish, "STOP")
    strictEqual(thoughtsTokens, 4)
  })
})

Deno.test("gemini: stream without alt=sse is a JSON array", async () => {
  await withEmulator({}, async (emulator) => {
    const response = await fetch(emulator.url + "/v1beta/models/gemini-2.5-flash:streamGenerateContent", {
      method: "POST",
      headers: { "x-goog-api-key": "k" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "a b" }] }] })
    })
    const chunks = await response.json() as Array<
      { candidates: Array<{ content: { parts: Array<{ text: string }> } }> }
    >
    deepStrictEqual(chunks.map((chunk) => chunk.candidates[0].content.parts[0].text), ["Echo: ", "a ", "b"])
    const sse = await fetch(emulator.url + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", {
      method: "POST",
      headers: { "x-goog-api-key": "k" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "a b" }] }] })
    })
    strictEqual((await readSse(sse)).length, 3)
  })
})

Deno.test("gemini: function calls (parallel), then functionResponse", async () => {
  await withEmulator({}, async (emulator) => {
    const gemini = client(emulator.url)
    const first = await gemini.models.generateContent({
      model: "gemini-2.5-flash",
      contents: "parallel weather",
      config: { tools: [{ functionDeclarations: [weatherDeclaration] }] }
    })
    const calls = first.functionCalls ?? []
    strictEqual(calls.length, 2)
    ok(calls[0].id !== calls[1].id)
    deepStrictEqual(calls[0].args, { location: "sample", unit: "celsius" })
    strictEqual(first.candidates![0].finishReason, "STOP")
    const second = await gemini.models.generateContent({
      model: "gemini-2.5-flash",
      contents: [
        { role: "user", parts: [{ text: "parallel weather" }] },
        first.candidates![0].content!,
        {
          role: "user",
          parts: calls.map((call) => ({
            functionResponse: { id: call.id, name: call.name, response: { output: "rain" } }
          }))
        }
      ],
      config: { tools: [{ functionDeclarations: [weatherDeclaration] }] }
    })
    strictEqual(second.text, 'Tool result: {"output":"rain"} | {"output":"rain"}')
    const none = await gemini.models.generateContent({
      model: "gemini-2.5-flash",
      contents: "no tools now",
      config: {
        tools: [{ functionDeclarations: [weatherDeclaration] }],
        toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.NONE } }
      }
    })
    strictEqual(none.text, "Echo: no tools now")
  })
})

Deno.test("gemini: parallel function responses spread over consecutive user turns (one per turn)", async () => {
  await withEmulator({}, async (emulator) => {
    const gemini = client(emulator.url)
    const config = { tools: [{ functionDeclarations: [weatherDeclaration] }] }
    const first = await gemini.models.generateContent({
      model: "gemini-2.5-flash",
      contents: "parallel weather",
      config
    })
    const calls = first.functionCalls ?? []
    strictEqual(calls.length, 2)
    const responseTurn = (index: number, output: string) => ({
      role: "user",
      parts: [{ functionResponse: { id: calls[index].id, name: calls[index].name, response: { output } } }]
    })
    const history = [{ role: "user", parts: [{ text: "parallel weather" }] }, first.candidates![0].content!]
    // As LangChain sends them: one user turn per function response.
    const second = await gemini.models.generateContent({
      model: "gemini-2.5-flash",
      contents: [...history, responseTurn(0, "rain"), responseTurn(1, "sun")],
      config
    })
    strictEqual(second.text, 'Tool result: {"output":"rain"} | {"output":"sun"}')
    // A later round counts only its own turn's calls.
    const third = await gemini.models.generateContent({
      model: "gemini-2.5-flash",
      contents: [
        ...history,
        responseTurn(0, "rain"),
        responseTurn(1, "sun"),
        second.candidates![0].content!,
        { role: "user", parts: [{ text: "and now?" }] }
      ],
      config
    })
    strictEqual(third.functionCalls?.length, 1)
    // A missing response, in one turn or spread over several, is the real API's 400.
    for (const contents of [[...history, responseTurn(0, "rain")], [...history, responseTurn(1, "sun")]]) {
      const response = await fetch(emulator.url + "/v1beta/models/gemini-2.5-flash:generateContent", {
        method: "POST",
        headers: { "x-goog-api-key": "gm-test", "content-type": "application/json" },
        body: JSON.stringify({ contents, tools: config.tools })
      })
      strictEqual(response.status, 400)
      const body = await response.json()
      strictEqual(body.error.code, 400)
      strictEqual(body.error.status, "INVALID_ARGUMENT")
      ok(body.error.message.startsWith("Please ensure that the number of function response parts"), body.error.message)
    }
    // Too many responses as well.
    const extra = await fetch(emulator.url + "/v1beta/models/gemini-2.5-flash:generateContent", {
      method: "POST",
      headers: { "x-goog-api-key": "gm-test", "content-type": "application/json" },
      body: JSON.stringify({
        contents: [...history, responseTurn(0, "a"), responseTurn(1, "b"), responseTurn(1, "c")],
        tools: config.tools
      })
    })
    strictEqual(extra.status, 400)
    await extra.body?.cancel()
  })
})

Deno.test("gemini: inline and file images, structured output, max tokens, stop sequences, cache", async () => {
  await withEmulator({}, async (emulator) => {
    const gemini = client(emulator.url)
    const image = await gemini.models.generateContent({
      model: "gemini-2.5-flash",
      contents: [{
        role: "user",
        parts: [
          { inlineData: { mimeType: "image/png", data: pixelPng } },
          { fileData: { mimeType: "image/jpeg", fileUri: "https://example.com/b.jpg" } },
          { text: "what" }
        ]
      }]
    })
    strictEqual(image.text, "I see 2 image(s) [image/png, https://example.com/b.jpg] Echo: what")
    const structured = await gemini.models.generateContent({
      model: "gemini-2.5-flash",
      contents: "json",
      config: { responseMimeType: "application/json", responseJsonSchema: weatherSchema }
    })
    deepStrictEqual(JSON.parse(structured.text!), { location: "sample", unit: "celsius" })
    const cut = await gemini.models.generateContent({
      model: "gemini-2.5-flash",
      contents: "one two three cached four",
      config: { maxOutputTokens: 2 }
    })
    strictEqual(cut.text, "Echo: one")
    strictEqual(cut.candidates![0].finishReason, "MAX_TOKENS")
    ok((cut.usageMetadata?.cachedContentTokenCount ?? 0) > 0)
    const stopped = await gemini.models.generateContent({
      model: "gemini-2.5-flash",
      contents: "red green blue",
      config: { stopSequences: ["blue"] }
    })
    strictEqual(stopped.text, "Echo: red green ")
  })
})

Deno.test("gemini: errors in Gemini's shape", async () => {
  await withEmulator({}, async (emulator) => {
    emulator.setFaults([{ status: 429, message: "Resource has been exhausted" }])
    await rejects(
      client(emulator.url).models.generateContent({ model: "gemini-2.5-flash", contents: "x" }),
      (error: unknown) => error instanceof Error && error.message.includes("RESOURCE_EXHAUSTED")
    )
    emulator.clearFaults()
    const models = await fetch(emulator.url + "/v1beta/models", { headers: { "x-goog-api-key": "k" } })
    ok(((await models.json()).models as Array<{ name: string }>)[0].name.startsWith("models/"))
  })
})

Deno.test("gemini: countTokens answers like the real API, for contents and for a generateContentRequest", async () => {
  await withEmulator({}, async (emulator) => {
    const counted = await client(emulator.url).models.countTokens({
      model: "gemini-2.5-flash",
      contents: "Hello Gemini"
    })
    const generated = await client(emulator.url).models.generateContent({
      model: "gemini-2.5-flash",
      contents: "Hello Gemini"
    })
    strictEqual(counted.totalTokens, generated.usageMetadata?.promptTokenCount)
    ok(emulator.requests[0].path.endsWith("/models/gemini-2.5-flash:countTokens"))
    const nested = await fetch(emulator.url + "/v1beta/models/gemini-2.5-flash:countTokens?key=k", {
      method: "POST",
      body: JSON.stringify({
        generateContentRequest: {
          model: "models/gemini-2.5-flash",
          contents: [{ role: "user", parts: [{ text: "Hello Gemini" }] }]
        }
      })
    })
    deepStrictEqual(await nested.json(), {
      totalTokens: counted.totalTokens,
      promptTokensDetails: [{ modality: "TEXT", tokenCount: counted.totalTokens }]
    })
    const empty = await fetch(emulator.url + "/v1beta/models/gemini-2.5-flash:countTokens?key=k", {
      method: "POST",
      body: "{}"
    })
    strictEqual(empty.status, 400)
    strictEqual((await empty.json()).error.status, "INVALID_ARGUMENT")
  })
})
