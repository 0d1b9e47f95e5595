/**
 * Gemini generate-content for the vendor emulator:
 * `POST /{v1,v1beta}/models/{model}:generateContent` and `…:streamGenerateContent`
 * (`?alt=sse` → `data:` SSE frames; without it, one JSON array streamed element by element),
 * `…:countTokens` (ai.google.dev/api/tokens: `{contents}` or `{generateContentRequest}` in,
 * `{totalTokens, promptTokensDetails}` out, counted as the generate route counts prompt tokens),
 * plus `GET /v1beta/models`.
 *
 * Wire shapes follow `@google/genai` 3.1 types (`GenerateContentResponse`, `Candidate`, `Part`,
 * `GenerateContentResponseUsageMetadata`, `FinishReason`) and
 * https://ai.google.dev/api/generate-content, https://ai.google.dev/gemini-api/docs/thinking.
 * Requests are read in the REST API's camelCase (what the SDK sends), with snake_case fallbacks.
 * Thought parts are emitted only with `includeThoughts: true`; a `thinkingBudget` > 0 alone counts
 * `thoughtsTokenCount` without showing thoughts, as the real API does. `usageMetadata` is sent on the
 * final stream chunk only. Function calls carry an `id` (newer Gemini models send one). A `fileData.fileUri`
 * that is not `https://` or `gs://` is refused as the real API does (400 INVALID_ARGUMENT), and so is a
 * `thoughtSignature` this emulator did not mint (400 INVALID_ARGUMENT "Corrupted thought signature.",
 * as the real API answers another vendor's or a damaged signature). Gemini 3 and later models (by name,
 * `gemini-3…`) sign the first `functionCall` part of an answer and refuse a request whose current turn
 * holds a model step whose first `functionCall` has no signature (400 INVALID_ARGUMENT "Function call is
 * missing a thought_signature in functionCall parts…"); the two documented validator-skipping values are
 * accepted in place of a signature (https://ai.google.dev/gemini-api/docs/thought-signatures).
 * Parallel function results may come in one user turn or spread over consecutive ones (one
 * `functionResponse` each, as LangChain sends them); their count must equal the calls of the model turn
 * before them (400 INVALID_ARGUMENT "Please ensure that the number of function response parts is equal to
 * the number of function call parts of the function call turn.", as the real API answers).
 *
 * @since 0.1.0
 */
import { geminiImageAnswer } from "./Images.ts"
import { type Answer, answer, type Prompt, promptTokens, stableHash, type ToolChoice, type ToolSpec } from "./Answer.ts"
import { geminiConfigProblem } from "./RequestChecks.ts"
import { geminiSpeechAnswer, geminiTranscriptAnswer } from "./Audio.ts"
import { dataFrame, jsonReply, type Reply, sseReply } from "./Sse.ts"
import {
  arrayOr,
  field,
  isObject,
  type JsonObject,
  numberOr,
  objectOr,
  type RouteContext,
  stopList,
  stringOr
} from "./Wire.ts"

/** Reads `camel` or else `snake` from an object. */

const partsText = (content: unknown): string =>
  arrayOr(objectOr(content).parts)
    .flatMap((part) => isObject(part) && typeof part.text === "string" && part.thought !== true ? [part.text] : [])
    .join(" ")

const geminiTools = (value: unknown): ReadonlyArray<ToolSpec> =>
  arrayOr(value).flatMap((tool) =>
    arrayOr(field(objectOr(tool), "functionDeclarations", "function_declarations")).flatMap((declaration) => {
      const item = objectOr(declaration)
      const name = stringOr(item.name)
      const schema = item.parameters ?? field(item, "parametersJsonSchema", "parameters_json_schema") ??
        { type: "object", properties: {} }
      return name === undefined ? [] : [{ name, schema }]
    })
  )

const geminiToolChoice = (toolConfig: unknown): ToolChoice => {
  const config = objectOr(field(objectOr(toolConfig), "functionCallingConfig", "function_calling_config"))
  const mode = stringOr(config.mode)?.toUpperCase()
  if (mode === "NONE") return "none"
  if (mode === "ANY" || mode === "VALIDATED") {
    const allowed = arrayOr(field(config, "allowedFunctionNames", "allowed_function_names"))
    return allowed.length === 1 && typeof allowed[0] === "string" ? { name: allowed[0] } : "required"
  }
  return "auto"
}

const prompt = (body: JsonObject, thinking: boolean): Prompt => {
  const contents = arrayOr(body.contents)
  const texts: Array<string> = [partsText(field(body, "systemInstruction", "system_instruction"))]
  let lastUserText = ""
  let images: Array<string> = []
  let toolResults: Array<string> = []
  for (const content of contents) {
    const item = objectOr(content)
    const messageTexts: Array<string> = []
    const messageImages: Array<string> = []
    const results: Array<string> = []
    for (const part of arrayOr(item.parts)) {
      if (!isObject(part)) continue
      const inline = objectOr(field(part, "inlineData", "inline_data"))
      const file = objectOr(field(part, "fileData", "file_data"))
      const call = field(part, "functionCall", "function_call")
      const response = field(part, "functionResponse", "function_response")
      if (typeof part.text === "string") {
        if (part.thought === true) texts.push(part.text)
        else messageTexts.push(part.text)
      } else if (Object.keys(inline).length > 0) {
        messageImages.push(stringOr(field(inline, "mimeType", "mime_type")) ?? "application/octet-stream")
      } else if (Object.keys(file).length > 0) {
        messageImages.push(stringOr(field(file, "fileUri", "file_uri")) ?? "")
      } else if (isObject(call)) {
        texts.push(JSON.stringify(call.args ?? {}))
      } else if (isObject(response)) {
        results.push(JSON.stringify(response.response ?? {}))
      }
    }
    texts.push(...messageTexts, ...results)
    if (item.role === "model") {
      toolResults = []
      continue
    }
    // Parallel results may be spread over consecutive user turns (one `functionResponse` each): a turn of
    // function responses only adds to the run; a turn with anything else starts it again.
    const onlyResponses = results.length > 0 && messageTexts.length === 0 && messageImages.length === 0
    toolResults = onlyResponses ? [...toolResults, ...results] : results
    if (messageTexts.length > 0 || messageImages.length > 0) {
      lastUserText = messageTexts.join(" ")
      images = messageImages
    }
  }
  const config = objectOr(field(body, "generationConfig", "generation_config"))
  const json = stringOr(field(config, "responseMimeType", "response_mime_type")) === "application/json"
  const schema = field(config, "responseJsonSchema", "response_json_schema") ??
    field(config, "responseSchema", "response_schema")
  return {
    lastUserText,
    images,
    toolResults,
    tools: geminiTools(body.tools),
    toolChoice: geminiToolChoice(field(body, "toolConfig", "tool_config")),
    reasoning: thinking,
    outputSchema: json ? schema ?? { type: "object", properties: { answer: { type: "string" } } } : undefined,
    maxTokens: numberOr(field(config, "maxOutputTokens", "max_output_tokens")),
    stop: stopList(field(config, "stopSequences", "stop_sequences")),
    texts,
    messageCount: contents.length
  }
}

const safetyRatings = [
  "HARM_CATEGORY_HATE_SPEECH",
  "HARM_CATEGORY_DANGEROUS_CONTENT",
  "HARM_CATEGORY_HARASSMENT",
  "HARM_CATEGORY_SEXUALLY_EXPLICIT"
].map((category) => ({ category, probability: "NEGLIGIBLE" }))

const usageMetadata = (result: Answer): JsonObject => {
  const candidates = result.outputTokens - result.reasoningTokens
  const usage: JsonObject = {
    promptTokenCount: result.promptTokens,
    candidatesTokenCount: candidates,
    totalTokenCount: result.promptTokens + result.outputTokens,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: result.promptTokens }]
  }
  if (result.cachedTokens > 0) usage.cachedContentTokenCount = result.cachedTokens
  if (result.reasoningTokens > 0) usage.thoughtsTokenCount = result.reasoningTokens
  return usage
}

/**
 * The first `fileData.fileUri` the real API refuses, or `undefined`. It takes
 * Files-API URIs and registered `gs://` objects, and since 2026-01 public or
 * signed `https://` URLs (blog.google "Increased file size limits and expanded
 * inputs support in Gemini API"); anything else (`http://`, `data:`, a bare
 * path) is `400 INVALID_ARGUMENT` "Invalid or unsupported file uri: …".
 */
const unsupportedFileUri = (contents: ReadonlyArray<unknown>): string | undefined => {
  for (const content of contents) {
    for (const part of arrayOr(objectOr(content).parts)) {
      if (!isObject(part)) continue
      const file = field(part, "fileData", "file_data")
      if (!isObject(file)) continue
      const uri = stringOr(field(file, "fileUri", "file_uri")) ?? ""
      if (!/^(https|gs):\/\/[^/\s]+/i.test(uri)) return uri
    }
  }
  return undefined
}

/**
 * The thought signature the emulator mints for a reasoning text: Base64 of `sig-<stableHash(text)>`.
 * A signature is checked by form only (the vendor attaches it to whichever part, and a streamed
 * thought arrives in pieces), see `isMintedThoughtSignature`. @category answers
 */
export const thoughtSignatureFor = (reasoning: string): string => btoa(`sig-${stableHash(reasoning)}`)

/**
 * The values Gemini documents for a function call it did not sign (history from another model, calls the
 * client made up), which skip its signature validation (ai.google.dev/gemini-api/docs/thought-signatures,
 * FAQ). @category answers
 */
export const validatorSkippingSignatures: ReadonlyArray<string> = [
  "skip_thought_signature_validator",
  "context_engineering_is_the_way_to_go"
]

/** Whether a model, by name, validates function-call signatures (Gemini 3 and later). @category answers */
export const checksCallSignatures = (model: string): boolean => {
  const major = /^gemini-(\d+)/.exec(model)?.[1]
  return major !== undefined && Number(major) >= 3
}

/** True when `value` is a signature `thoughtSignatureFor` could have produced. @category answers */
export const isMintedThoughtSignature = (value: unknown): boolean => {
  if (typeof value !== "string") return false
  try {
    return /^sig-[0-9a-f]{8}$/.test(atob(value))
  } catch {
    return false
  }
}

/** True when some part of some content carries a `thoughtSignature` the emulator did not mint. */
const hasForeignSignature = (contents: ReadonlyArray<unknown>): boolean =>
  contents.some((content) =>
    arrayOr(objectOr(content).parts).some((part) => {
      if (!isObject(part)) return false
      const signature = field(part, "thoughtSignature", "thought_signature")
      return signature !== undefined && !isMintedThoughtSignature(signature) &&
        !validatorSkippingSignatures.includes(String(signature))
    })
  )

/**
 * The first unsigned call of the current turn, as Gemini 3 checks it: the turn starts after the last user
 * content holding anything but function responses, and in each model content (a step) after it the first
 * `functionCall` part must carry a signature. Returns the call's name and its content's position.
 */
const unsignedCall = (
  contents: ReadonlyArray<unknown>
): { readonly name: string; readonly position: number } | undefined => {
  const partsOf = (content: unknown) => arrayOr(objectOr(content).parts).map(objectOr)
  let start = 0
  for (let index = contents.length - 1; index >= 0; index--) {
    const content = objectOr(contents[index])
    if (
      content.role !== "model" &&
      partsOf(content).some((part) => field(part, "functionResponse", "function_response") === undefined)
    ) {
      start = index + 1
      break
    }
  }
  for (let index = start; index < contents.length; index++) {
    if (objectOr(contents[index]).role !== "model") continue
    const call = partsOf(contents[index]).find((part) => field(part, "functionCall", "function_call") !== undefined)
    if (call !== undefined && field(call, "thoughtSignature", "thought_signature") === undefined) {
      return { name: stringOr(objectOr(field(call, "functionCall", "function_call")).name) ?? "", position: index + 1 }
    }
  }
  return undefined
}

/**
 * The first model turn whose function calls do not each get a response: the real API counts the
 * `functionResponse` parts of the consecutive non-model contents after a model content with `functionCall`
 * parts (one turn or spread over several, as LangChain sends parallel results) and refuses a count that
 * differs, with 400 INVALID_ARGUMENT "Please ensure that the number of function response parts is equal to
 * the number of function call parts of the function call turn." A model turn that ends the contents is
 * not checked. Returns the 1-based position of that model content.
 */
const unansweredCalls = (contents: ReadonlyArray<unknown>): number | undefined => {
  const count = (content: unknown, camel: string, snake: string) =>
    arrayOr(objectOr(content).parts).filter((part) => isObject(part) && isObject(field(part, camel, snake))).length
  for (let index = 0; index < contents.length; index++) {
    if (objectOr(contents[index]).role !== "model") continue
    const calls = count(contents[index], "functionCall", "function_call")
    if (calls === 0) continue
    let next = index + 1
    let responses = 0
    while (next < contents.length && objectOr(contents[next]).role !== "model") {
      responses += count(contents[next], "functionResponse", "function_response")
      next++
    }
    if (next > index + 1 && responses !== calls) return index + 1
  }
  return undefined
}

/** Handles `:generateContent` and `:streamGenerateContent`. @category routes */
export const geminiGenerate = (context: RouteContext): Reply => {
  const body = context.body
  if (!Array.isArray(body.contents) || body.contents.length === 0) {
    return jsonReply({
      error: {
        code: 400,
        message: "* GenerateContentRequest.contents: contents is not specified",
        status: "INVALID_ARGUMENT"
      }
    }, 400)
  }
  const badUri = unsupportedFileUri(body.contents)
  if (badUri !== undefined) {
    return jsonReply({
      error: { code: 400, message: `Invalid or unsupported file uri: ${badUri}`, status: "INVALID_ARGUMENT" }
    }, 400)
  }
  if (hasForeignSignature(body.contents)) {
    return jsonReply({
      error: { code: 400, message: "Corrupted thought signature.", status: "INVALID_ARGUMENT" }
    }, 400)
  }
  const configProblem = geminiConfigProblem(body, context.model)
  if (configProblem !== undefined) {
    return jsonReply({ error: { code: 400, message: configProblem.message, status: "INVALID_ARGUMENT" } }, 400)
  }
  if (unansweredCalls(body.contents) !== undefined) {
    return jsonReply({
      error: {
        code: 400,
        message: "Please ensure that the number of function response parts is equal to the number of function " +
          "call parts of the function call turn.",
        status: "INVALID_ARGUMENT"
      }
    }, 400)
  }
  const signsCalls = checksCallSignatures(context.model)
  const unsigned = signsCalls ? unsignedCall(body.contents) : undefined
  if (unsigned !== undefined) {
    return jsonReply({
      error: {
        code: 400,
        message: "Function call is missing a thought_signature in functionCall parts. This is required for tools " +
          "to work correctly, and missing thought_signature may lead to degraded model performance. Additional " +
          `data, function call \`default_api:${unsigned.name}\` , position ${unsigned.position}. please refer to ` +
          "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
        status: "INVALID_ARGUMENT"
      }
    }, 400)
  }
  const generationConfig = objectOr(field(body, "generationConfig", "generation_config"))
  const modalities = arrayOr(field(generationConfig, "responseModalities", "response_modalities"))
  // Image output on image models only; other models answer text as before (gateway tests of pass-through fields).
  if (context.model.includes("image") && modalities.some((modality) => String(modality).toUpperCase() === "IMAGE")) {
    return geminiImageAnswer(context, generationConfig)
  }
  if (modalities.some((modality) => String(modality).toUpperCase() === "AUDIO")) {
    return geminiSpeechAnswer(context, generationConfig)
  }
  const transcript = geminiTranscriptAnswer(context)
  if (transcript !== undefined) return transcript
  const thinkingConfig = objectOr(field(generationConfig, "thinkingConfig", "thinking_config"))
  const includeThoughts = field(thinkingConfig, "includeThoughts", "include_thoughts") === true
  const budget = numberOr(field(thinkingConfig, "thinkingBudget", "thinking_budget")) ?? 0
  const result = answer(prompt(body, includeThoughts || budget > 0), context.toolCalls)
  const responseId = context.ids.next("resp-")
  const callIds = result.toolCalls.map(() => context.ids.next("fc-"))
  const finishReason = result.finish === "length" ? "MAX_TOKENS" : "STOP"
  const thoughtSignature = result.reasoning === undefined ? "" : thoughtSignatureFor(result.reasoning)
  const showThoughts = includeThoughts && result.reasoning !== undefined
  // Gemini 3 signs the first call of an answer (parallel calls: only the first).
  const callParts = result.toolCalls.map((call, index) => ({
    functionCall: { id: callIds[index], name: call.name, args: call.input },
    ...(signsCalls && index === 0
      ? { thoughtSignature: thoughtSignatureFor(`${call.name}:${JSON.stringify(call.input)}`) }
      : {})
  }))
  const envelope = (parts: ReadonlyArray<JsonObject>, last: boolean): JsonObject => {
    const candidate: JsonObject = { content: { parts, role: "model" }, index: 0 }
    if (last) {
      candidate.finishReason = finishReason
      candidate.safetyRatings = safetyRatings
    }
    const response: JsonObject = { candidates: [candidate] }
    if (last) response.usageMetadata = usageMetadata(result)
    response.modelVersion = context.model
    response.responseId = responseId
    return response
  }
  const path = context.path
  if (!path.endsWith(":streamGenerateContent")) {
    const parts: Array<JsonObject> = []
    if (showThoughts) parts.push({ text: result.reasoning, thought: true, thoughtSignature })
    if (result.toolCalls.length === 0) parts.push({ text: result.text })
    parts.push(...callParts)
    return jsonReply(envelope(parts, true))
  }
  const chunks: Array<ReadonlyArray<JsonObject>> = []
  if (showThoughts) {
    result.reasoningWords.forEach((word, index) =>
      chunks.push([
        index === result.reasoningWords.length - 1
          ? { text: word, thought: true, thoughtSignature }
          : { text: word, thought: true }
      ])
    )
  }
  for (const word of result.words) chunks.push([{ text: word }])
  for (const part of callParts) chunks.push([part])
  if (chunks.length === 0) chunks.push([{ text: "" }])
  const responses = chunks.map((parts, index) => envelope(parts, index === chunks.length - 1))
  if (context.query.alt === "sse") return sseReply(responses.map((response) => dataFrame(response)))
  const frames = responses.map((response, index) => (index === 0 ? "[" : ",\r\n") + JSON.stringify(response))
  frames.push("]")
  return { _tag: "Events", contentType: "application/json; charset=UTF-8", frames }
}

/**
 * Handles `:countTokens` (ai.google.dev/api/tokens, `models.countTokens`): the
 * body holds `contents`, or a whole `generateContentRequest` (which wins when
 * both are sent); the answer is `CountTokensResponse`
 * `{totalTokens, promptTokensDetails: [{modality, tokenCount}]}`, counted as
 * `:generateContent` counts its `promptTokenCount`. No contents at all is a
 * 400 INVALID_ARGUMENT, as the real API answers.
 *
 * @category routes
 */
export const geminiCountTokens = (context: RouteContext): Reply => {
  const nested = field(context.body, "generateContentRequest", "generate_content_request")
  const body = isObject(nested) ? nested : context.body
  if (!Array.isArray(body.contents) || body.contents.length === 0) {
    return jsonReply({
      error: {
        code: 400,
        message: "* CountTokensRequest.contents: contents is not specified",
        status: "INVALID_ARGUMENT"
      }
    }, 400)
  }
  const total = promptTokens(prompt(body, false)).prompt
  return jsonReply({ totalTokens: total, promptTokensDetails: [{ modality: "TEXT", tokenCount: total }] })
}

/** Model names listed by the Gemini route. @category models */
export const geminiModelIds: ReadonlyArray<string> = ["gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.0-flash"]

/** `GET /v1beta/models` in Gemini's `ListModelsResponse` shape. @category routes */
export const geminiModels = (): Reply =>
  jsonReply({
    models: geminiModelIds.map((id) => ({
      name: `models/${id}`,
      version: "001",
      displayName: id,
      description: `Emulated ${id}`,
      inputTokenLimit: 1_048_576,
      outputTokenLimit: 65_536,
      supportedGenerationMethods: ["generateContent", "countTokens"],
      thinking: true
    }))
  })
