/**
 * The request settings a Responses `Response` object repeats, as OpenAI's API
 * does (API reference, "The response object": `instructions`,
 * `max_output_tokens`, `tools`, `tool_choice`, `temperature`, … are the
 * request's values, or the API's defaults when the request had none; shapes
 * from the SDK type `Response` in openai@7.57.0). A translated answer is built
 * by the gateway, so it echoes the caller's body itself.
 *
 * @since 0.1.0
 */

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

const stringOr = (value: unknown, fallback: string | null): string | null =>
  typeof value === "string" ? value : fallback

const numberOr = (value: unknown, fallback: number | null): number | null =>
  typeof value === "number" && Number.isFinite(value) ? value : fallback

/** A value the caller sent as a string, or nothing (the key left out). */
const optionalString = (key: string, value: unknown): Json => (typeof value === "string" ? { [key]: value } : {})

/** A value the caller sent as an integer, or nothing (the key left out). */
const optionalInteger = (key: string, value: unknown): Json =>
  typeof value === "number" && Number.isSafeInteger(value) ? { [key]: value } : {}

/**
 * The echoed fields of a `Response` object for the caller's JSON body
 * `request` (`undefined`: none known, every field at the API's default):
 * `instructions` (string or null), `max_output_tokens` (tokens or null),
 * `parallel_tool_calls` (default true), `previous_response_id`, `reasoning`
 * (`effort`, `summary`), `store` (default true), `temperature`, `top_p` (null
 * when not sent), `text` (`format`, default `{type: "text"}`, and
 * `verbosity` when sent), `tool_choice` (default `auto`), `tools` (default
 * `[]`), `truncation` (default `disabled`), `metadata` (default `{}`), and
 * `user`, `safety_identifier`, `prompt_cache_key`, `max_tool_calls`,
 * `top_logprobs` when sent. A value of the wrong type counts as not sent (the
 * decoder has already refused the ones it reads).
 *
 * @category encoding
 */
export const echoedRequestFields = (request: Readonly<Json> | undefined): Json => {
  const body = request ?? {}
  const reasoning = isObject(body.reasoning) ? body.reasoning : {}
  const text = isObject(body.text) ? body.text : {}
  return {
    instructions: stringOr(body.instructions, null),
    max_output_tokens: numberOr(body.max_output_tokens, null),
    parallel_tool_calls: typeof body.parallel_tool_calls === "boolean" ? body.parallel_tool_calls : true,
    previous_response_id: stringOr(body.previous_response_id, null),
    reasoning: {
      effort: stringOr(reasoning.effort, null),
      summary: stringOr(reasoning.summary ?? reasoning.generate_summary, null)
    },
    store: typeof body.store === "boolean" ? body.store : true,
    temperature: numberOr(body.temperature, null),
    text: {
      format: isObject(text.format) ? text.format : { type: "text" },
      ...optionalString("verbosity", text.verbosity)
    },
    tool_choice: typeof body.tool_choice === "string" || isObject(body.tool_choice) ? body.tool_choice : "auto",
    tools: Array.isArray(body.tools) ? body.tools : [],
    top_p: numberOr(body.top_p, null),
    truncation: body.truncation === "auto" ? "auto" : "disabled",
    metadata: isObject(body.metadata) ? body.metadata : {},
    ...optionalString("user", body.user),
    ...optionalString("safety_identifier", body.safety_identifier),
    ...optionalString("prompt_cache_key", body.prompt_cache_key),
    ...optionalInteger("max_tool_calls", body.max_tool_calls),
    ...optionalInteger("top_logprobs", body.top_logprobs)
  }
}
