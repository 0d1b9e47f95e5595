import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { chatParamProblem, responsesParamProblem } from "../../emulator/OpenAiParams.ts"

Deno.test("emulator: chat refuses a non-integer seed, a bad store or verbosity, stream_options without stream", () => {
  strictEqual(
    chatParamProblem({ seed: 1e20, store: false, verbosity: "low", stream: true, stream_options: {} }),
    undefined
  )
  deepStrictEqual(chatParamProblem({ seed: 1.5 }), {
    message: "Invalid type for 'seed': expected an integer, but got a decimal number instead.",
    param: "seed"
  })
  strictEqual(chatParamProblem({ store: "no" })?.param, "store")
  strictEqual(chatParamProblem({ verbosity: "loud" })?.param, "verbosity")
  strictEqual(chatParamProblem({ stream_options: { include_usage: true } })?.param, "stream_options")
})

Deno.test("emulator: responses refuses an unknown include value, a bad text.verbosity or store", () => {
  strictEqual(
    responsesParamProblem({ include: ["reasoning.encrypted_content"], text: { verbosity: "high" } }),
    undefined
  )
  strictEqual(responsesParamProblem({ include: ["reasoning.encrypted_content", "nope"] })?.param, "include[1]")
  strictEqual(responsesParamProblem({ text: { verbosity: "x" } })?.param, "text.verbosity")
  strictEqual(responsesParamProblem({ store: 1 })?.param, "store")
  strictEqual(responsesParamProblem({ stream_options: { include_obfuscation: false } })?.param, "stream_options")
})
