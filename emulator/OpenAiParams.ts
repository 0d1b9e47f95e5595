/**
 * Checks OpenAI's APIs make on request fields the gateway forwards or
 * translates (`store`, `seed`, `verbosity`, `include`, `stream_options`), so a
 * test fails for the right reason when the gateway sends what the real API
 * refuses. Messages follow the API's wording; value sets from openai@7.57.0
 * (`ResponseIncludable`, `ChatCompletionCreateParamsBase.verbosity`,
 * `ResponseTextConfig.verbosity`).
 *
 * @since 0.1.0
 */
import { isObject, type JsonObject } from "./Wire.ts"

/** A refusal: the API's message and the `param` it names. @category models */
export interface ParamProblem {
  readonly message: string
  readonly param: string
}

const VERBOSITY: ReadonlyArray<string> = ["low", "medium", "high"]

/** `ResponseIncludable` of openai@7.57.0. */
const INCLUDABLE: ReadonlyArray<string> = [
  "file_search_call.results",
  "web_search_call.results",
  "web_search_call.action.sources",
  "message.input_image.image_url",
  "computer_call_output.output.image_url",
  "code_interpreter_call.outputs",
  "reasoning.encrypted_content",
  "message.output_text.logprobs"
]

const typeName = (value: unknown): string =>
  typeof value === "number" ? (Number.isInteger(value) ? "an integer" : "a decimal number") : `a ${typeof value}`

const present = (value: unknown): boolean => value !== undefined && value !== null

const checkStore = (body: JsonObject): ParamProblem | undefined =>
  present(body.store) && typeof body.store !== "boolean"
    ? {
      message: `Invalid type for 'store': expected a boolean, but got ${typeName(body.store)} instead.`,
      param: "store"
    }
    : undefined

const checkVerbosity = (value: unknown, param: string): ParamProblem | undefined =>
  present(value) && !VERBOSITY.includes(String(value))
    ? {
      message: `Invalid value: '${String(value)}'. Supported values are: 'low', 'medium', and 'high'.`,
      param
    }
    : undefined

const checkStreamOptions = (body: JsonObject): ParamProblem | undefined =>
  present(body.stream_options) && body.stream !== true
    ? { message: "The 'stream_options' parameter is only allowed when 'stream' is enabled.", param: "stream_options" }
    : undefined

/**
 * What `POST /v1/chat/completions` refuses among these fields: a `seed` that
 * is not an integer, a `store` that is not a boolean, an unknown `verbosity`,
 * `stream_options` without `stream: true`.
 *
 * @category validation
 */
export const chatParamProblem = (body: JsonObject): ParamProblem | undefined => {
  if (present(body.seed) && !(typeof body.seed === "number" && Number.isInteger(body.seed))) {
    return {
      message: `Invalid type for 'seed': expected an integer, but got ${typeName(body.seed)} instead.`,
      param: "seed"
    }
  }
  return checkStore(body) ?? checkVerbosity(body.verbosity, "verbosity") ?? checkStreamOptions(body)
}

/**
 * What `POST /v1/responses` refuses among these fields: a `store` that is not
 * a boolean, an unknown `text.verbosity`, an `include` value the API does not
 * know, `stream_options` without `stream: true`.
 *
 * @category validation
 */
export const responsesParamProblem = (body: JsonObject): ParamProblem | undefined => {
  const include = Array.isArray(body.include) ? body.include : []
  const unknown = include.findIndex((value) => !INCLUDABLE.includes(String(value)))
  if (unknown !== -1) {
    return {
      message: `Invalid value: '${String(include[unknown])}'. Supported values are: ${
        INCLUDABLE.map((value) => `'${value}'`).join(", ")
      }.`,
      param: `include[${unknown}]`
    }
  }
  const text = isObject(body.text) ? body.text : {}
  return checkStore(body) ?? checkVerbosity(text.verbosity, "text.verbosity") ?? checkStreamOptions(body)
}
