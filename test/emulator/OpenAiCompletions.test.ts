import { deepStrictEqual, strictEqual } from "node:assert/strict"
import OpenAI from "openai"
import { readSse, withEmulator } from "./Support.ts"

const client = (url: string) => new OpenAI({ baseURL: url + "/v1", apiKey: "sk-test", maxRetries: 0 })

Deno.test("completions: prompt string and array, stop, default max_tokens 16", async () => {
  await withEmulator({}, async (emulator) => {
    const openai = client(emulator.url)
    const single = await openai.completions.create({ model: "gpt-3.5-turbo-instruct", prompt: "Say this" })
    strictEqual(single.object, "text_completion")
    strictEqual(single.choices[0].text, "Echo: Say this")
    strictEqual(single.choices[0].finish_reason, "stop")
    const many = await openai.completions.create({
      model: "gpt-3.5-turbo-instruct",
      prompt: ["first one", "second x"],
      stop: "x"
    })
    deepStrictEqual(many.choices.map((choice) => [choice.index, choice.text]), [[0, "Echo: first one"], [
      1,
      "Echo: second "
    ]])
    const long = await openai.completions.create({ model: "m", prompt: Array(30).fill("w").join(" ") })
    strictEqual(long.choices[0].finish_reason, "length")
    strictEqual(long.usage?.completion_tokens, 16)
  })
})

Deno.test("completions: stream with usage chunk and [DONE]", async () => {
  await withEmulator({}, async (emulator) => {
    const response = await fetch(emulator.url + "/v1/completions", {
      method: "POST",
      headers: { authorization: "Bearer sk-test" },
      body: JSON.stringify({ model: "m", prompt: "a b", stream: true, stream_options: { include_usage: true } })
    })
    const frames = await readSse(response)
    const texts = frames.slice(0, 4).map((frame) =>
      (frame.data as { choices: Array<{ text: string }> }).choices[0].text
    )
    deepStrictEqual(texts, ["Echo: ", "a ", "b", ""])
    strictEqual((frames[3].data as { choices: Array<{ finish_reason: string }> }).choices[0].finish_reason, "stop")
    deepStrictEqual((frames[4].data as { choices: unknown[] }).choices, [])
    strictEqual(frames[5].data, "[DONE]")
    const stream = await client(emulator.url).completions.create({ model: "m", prompt: "sdk stream", stream: true })
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? ""
    strictEqual(text, "Echo: sdk stream")
  })
})
