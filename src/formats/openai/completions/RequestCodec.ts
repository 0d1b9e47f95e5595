/**
 * The legacy completions request (`POST /v1/completions`, spec "Text: legacy
 * completions"; openai@7.57.0 `resources/completions.d.ts`
 * `CompletionCreateParamsBase`) in both directions.
 *
 * @since 0.1.0
 */
import { Result, Schema } from "effect"
import type { Request } from "../../../canonical/Request.ts"
import { InvalidRequest } from "../../../errors/GatewayError.ts"
import type { Decoded, EncodedRequest } from "../../Format.ts"
import { hasCacheBreakpoints } from "../../shared/CacheBreakpoints.ts"
import { makeWireDecoder } from "../../shared/WireDecode.ts"

const optionalNullable = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

const Body = Schema.Struct({
  model: Schema.String,
  prompt: Schema.Union([Schema.String, Schema.Array(Schema.String)]),
  max_tokens: optionalNullable(Schema.Int),
  temperature: optionalNullable(Schema.Number),
  top_p: optionalNullable(Schema.Number),
  stop: optionalNullable(Schema.Union([Schema.String, Schema.Array(Schema.String)])),
  seed: optionalNullable(Schema.Int),
  presence_penalty: optionalNullable(Schema.Number),
  frequency_penalty: optionalNullable(Schema.Number),
  user: optionalNullable(Schema.String),
  n: optionalNullable(Schema.Int),
  stream: optionalNullable(Schema.Boolean)
})

const decodeBody = makeWireDecoder(Body)

const rejected = (
  message: string,
  param: string
): Decoded<Request> => Result.fail(new InvalidRequest({ message, param }))

const orUndefined = <A>(value: A | null | undefined): A | undefined => value === null ? undefined : value

const defined = <A extends object>(record: A): A =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as A

/**
 * A caller's completions body → canonical `Request`: one user message whose
 * single text part is the prompt. `prompt` is required (param `prompt`); an
 * empty array is rejected; token-id prompts are rejected by type. An array of
 * several strings is a batch asking for one completion per prompt (the API
 * answers one choice per prompt, `index` in order, and one usage for all):
 * a completions upstream takes it as sent, but a single canonical answer
 * cannot carry it, so it is listed as `Request.untranslatable` (param
 * `prompt`); its canonical form holds one text part per prompt, so the prompt
 * estimate covers them all, and `choices` counts the completions (prompts
 * times `n`), so the quota hold does too. `n` above 1 is the same (param
 * `n`); below 1 it is rejected. `echo`, `logprobs`, `suffix`, `best_of` and
 * `logit_bias` are ignored (no canonical field). Never throws.
 *
 * @category decoding
 */
export const decodeCompletionsRequest = (
  body: unknown,
  context: { readonly model?: string | undefined; readonly stream?: boolean | undefined }
): Decoded<Request> => {
  const decoded = decodeBody(body)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const value = decoded.success
  const n = orUndefined(value.n) ?? 1
  if (n < 1) return rejected(`n must be at least 1 (got ${n}).`, "n")
  const prompts = typeof value.prompt === "string" ? [value.prompt] : value.prompt
  if (prompts.length === 0) return rejected("prompt must not be empty.", "prompt")
  const stop = orUndefined(value.stop)
  const choices = prompts.length * n
  const untranslatable = [
    ...(prompts.length === 1 ? [] : [{
      param: "prompt",
      message: `A batch of ${prompts.length} prompts (one completion each) reaches only a completions upstream; ` +
        "this model's channel would need a translation, which answers one completion. Send one prompt per request."
    }]),
    ...(n === 1 ? [] : [{
      param: "n",
      message: `n = ${n} completions reach only a completions upstream; this model's channel would need a ` +
        "translation, which answers one."
    }])
  ]
  return Result.succeed(defined<Request>({
    model: value.model,
    messages: [{ role: "user", content: prompts.map((text) => ({ type: "text", text })) }],
    maxOutputTokens: orUndefined(value.max_tokens),
    temperature: orUndefined(value.temperature),
    topP: orUndefined(value.top_p),
    stopSequences: stop === undefined ? undefined : typeof stop === "string" ? [stop] : stop,
    seed: orUndefined(value.seed),
    presencePenalty: orUndefined(value.presence_penalty),
    frequencyPenalty: orUndefined(value.frequency_penalty),
    user: orUndefined(value.user),
    stream: orUndefined(value.stream) ?? context.stream ?? false,
    choices: choices === 1 ? undefined : choices,
    untranslatable: untranslatable.length === 0 ? undefined : untranslatable
  }))
}

/** The separator between the texts of successive messages in the prompt. */
const messageSeparator = "\n\n"

/**
 * The canonical fields `request` uses that a completions body cannot express:
 * `tools`, `toolChoice`, `parallelToolCalls`, `responseFormat`, `reasoning`,
 * `topK`, `metadata`, `store`, `include`, `verbosity`; `cache` (prompt-cache breakpoints); `messages.roles` (several messages, or one that is not a
 * user message, are flattened into one prompt); `messages.tool-call`,
 * `messages.tool-result`, `messages.reasoning`, `messages.media` (images,
 * audio, files).
 *
 * @category encoding
 */
export const completionsDroppedFields = (request: Request): ReadonlyArray<string> => {
  const dropped: Array<string> = []
  const unsupported = {
    tools: request.tools,
    toolChoice: request.toolChoice,
    parallelToolCalls: request.parallelToolCalls,
    responseFormat: request.responseFormat,
    reasoning: request.reasoning,
    topK: request.topK,
    metadata: request.metadata,
    store: request.store,
    include: request.include,
    verbosity: request.verbosity
  }
  for (const [name, value] of Object.entries(unsupported)) if (value !== undefined) dropped.push(name)
  if (hasCacheBreakpoints(request)) dropped.push("cache")
  if (request.messages.length > 1 || request.messages.some((message) => message.role !== "user")) {
    dropped.push("messages.roles")
  }
  const kinds = new Set(request.messages.flatMap((message) => message.content.map((part) => part.type)))
  if (kinds.has("tool-call")) dropped.push("messages.tool-call")
  if (kinds.has("tool-result")) dropped.push("messages.tool-result")
  if (kinds.has("reasoning")) dropped.push("messages.reasoning")
  if (kinds.has("image") || kinds.has("audio") || kinds.has("file")) dropped.push("messages.media")
  return dropped
}

/**
 * Canonical `Request` → completions body: `prompt` is the text of every
 * message in order (each message's text parts concatenated, messages joined
 * by a blank line, without role labels); sampling fields, stop sequences
 * (array), seed, penalties and `user` carry over; a stream asks for usage
 * (`stream_options: {include_usage: true}`).
 *
 * @category encoding
 */
export const encodeCompletionsRequest = (request: Request): EncodedRequest => {
  const prompt = request.messages
    .map((message) => message.content.map((part) => (part.type === "text" ? part.text : "")).join(""))
    .filter((text, _index, texts) => text !== "" || texts.length === 1)
    .join(messageSeparator)
  const body = defined<Record<string, unknown>>({
    model: request.model,
    prompt,
    max_tokens: request.maxOutputTokens,
    temperature: request.temperature,
    top_p: request.topP,
    stop: request.stopSequences,
    seed: request.seed,
    presence_penalty: request.presencePenalty,
    frequency_penalty: request.frequencyPenalty,
    user: request.user,
    stream: request.stream ? true : undefined,
    stream_options: request.stream ? { include_usage: true } : undefined
  })
  return { body, dropped: completionsDroppedFields(request) }
}
