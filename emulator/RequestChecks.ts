/**
 * Request checks of the vendor emulator for fields a gateway passes through
 * without modelling them, so a test fails for the right reason when such a
 * field arrives damaged or in the wrong place. Each check answers the first
 * problem found (`{message, param}`) or `undefined`.
 *
 * - Chat completions user content parts: the OpenAI part types (`text`,
 *   `image_url`, `input_audio`, `file`; openai SDK 7.57
 *   `ChatCompletionContentPart`) plus `video_url` (`{video_url: {url}}`, the
 *   part OpenAI-compatible video models take, spec "Text: chat completions"),
 *   each with its required fields; a `file` needs `file_data` or `file_id`.
 * - Responses input items: the item types of openai SDK 7.57
 *   `ResponseInputItem`; an `item_reference` and a replayed hosted tool call
 *   (`web_search_call`, `file_search_call`, …) need their `id`; an
 *   `input_image` needs `image_url` or `file_id`; a `reasoning` item whose
 *   `encrypted_content` is a gateway's wrapper of another vendor's token
 *   (`sluice.<origin>.…`, which OpenAI cannot decrypt) is refused ("The
 *   encrypted content … could not be verified."). A hosted-tool `tool_choice`
 *   (`{type: "web_search"}`) must name a tool type the request's `tools` has
 *   (the emulator's rule: the choice forces that tool).
 * - Generate-content `generationConfig.thinkingConfig`: `thinkingLevel` and
 *   `thinkingBudget` together are refused ("You can only set only one of
 *   thinking budget and thinking level.", as reported in
 *   github.com/sterlp/eclipse-peon-ai/issues/115), and so is `thinkingLevel`
 *   on a model before Gemini 3 ("thinking_level is not supported by this
 *   model", github.com/QwenLM/qwen-code/pull/9094); `responseModalities`
 *   values are `TEXT`, `IMAGE`, `AUDIO` (`@google/genai` 3.1 `Modality`).
 *
 * @since 0.1.0
 */
import { arrayOr, field, isObject, objectOr, stringOr } from "./Wire.ts"

/** A refused field: the vendor's message and the field's path. @category models */
export interface Problem {
  readonly message: string
  readonly param: string
}

const missing = (param: string): Problem => ({ message: `Missing required parameter: '${param}'.`, param })

const chatPartFields: Record<string, ReadonlyArray<ReadonlyArray<string>>> = {
  text: [["text"]],
  image_url: [["image_url", "url"]],
  input_audio: [["input_audio", "data"], ["input_audio", "format"]],
  video_url: [["video_url", "url"]],
  file: []
}

/**
 * The first problem of the user content parts of chat `messages`.
 *
 * @category checks
 */
export const chatContentProblem = (messages: ReadonlyArray<unknown>): Problem | undefined => {
  for (const [index, message] of messages.entries()) {
    if (objectOr(message).role !== "user") continue
    for (const [position, part] of arrayOr(objectOr(message).content).entries()) {
      const at = `messages[${index}].content[${position}]`
      const type = stringOr(objectOr(part).type)
      if (type === undefined || !Object.hasOwn(chatPartFields, type)) {
        return {
          message: `Invalid value: '${type ?? ""}'. Supported values are: 'text', 'image_url', 'input_audio', ` +
            "'video_url' and 'file'.",
          param: `${at}.type`
        }
      }
      for (const path of chatPartFields[type]) {
        const value = path.reduce<unknown>((current, key) => objectOr(current)[key], part)
        if (typeof value !== "string") return missing(`${at}.${path.join(".")}`)
      }
      if (type === "file") {
        const file = objectOr(objectOr(part).file)
        if (typeof file.file_data !== "string" && typeof file.file_id !== "string") {
          return missing(`${at}.file.file_data`)
        }
      }
    }
  }
  return undefined
}

/** Item types of `ResponseInputItem` (openai SDK 7.57). */
const responsesItemTypes: ReadonlySet<string> = new Set([
  "message",
  "function_call",
  "function_call_output",
  "reasoning",
  "item_reference",
  "file_search_call",
  "web_search_call",
  "computer_call",
  "computer_call_output",
  "code_interpreter_call",
  "image_generation_call",
  "local_shell_call",
  "local_shell_call_output",
  "shell_call",
  "shell_call_output",
  "apply_patch_call",
  "apply_patch_call_output",
  "mcp_list_tools",
  "mcp_approval_request",
  "mcp_approval_response",
  "mcp_call",
  "custom_tool_call",
  "custom_tool_call_output",
  "tool_search_call",
  "tool_search_output",
  "additional_tools",
  "configuration_update",
  "compaction",
  "compaction_trigger",
  "program",
  "program_output"
])

/** Items that name an object by `id` (a reference, or a replayed hosted call). */
const itemsWithId: ReadonlySet<string> = new Set([
  "item_reference",
  "file_search_call",
  "web_search_call",
  "code_interpreter_call",
  "image_generation_call",
  "mcp_call",
  "mcp_list_tools"
])

/** `tool_choice` objects that are not a hosted tool type. */
const plainChoices: ReadonlySet<string> = new Set([
  "function",
  "allowed_tools",
  "mcp",
  "custom",
  "apply_patch",
  "shell"
])

/**
 * The first problem of a Responses body's `input` items and `tool_choice`.
 *
 * @category checks
 */
export const responsesInputProblem = (body: Record<string, unknown>): Problem | undefined => {
  for (const [index, item] of arrayOr(body.input).entries()) {
    const at = `input[${index}]`
    const raw = objectOr(item)
    const type = raw.type === undefined || raw.type === null
      ? (raw.id === undefined ? "message" : "item_reference")
      : stringOr(raw.type)
    if (type === undefined || !responsesItemTypes.has(type)) {
      return { message: `Invalid value: '${String(raw.type)}'.`, param: `${at}.type` }
    }
    if (itemsWithId.has(type) && typeof raw.id !== "string") return missing(`${at}.id`)
    if (
      type === "reasoning" && typeof raw.encrypted_content === "string" && raw.encrypted_content.startsWith("sluice.")
    ) {
      return {
        message: `The encrypted content for item ${stringOr(raw.id) ?? at} could not be verified.`,
        param: `${at}.encrypted_content`
      }
    }
    if (type !== "message") continue
    for (const [position, part] of arrayOr(raw.content).entries()) {
      const content = objectOr(part)
      if (content.type !== "input_image") continue
      if (typeof content.image_url !== "string" && typeof content.file_id !== "string") {
        return missing(`${at}.content[${position}].image_url`)
      }
    }
  }
  const choice = body.tool_choice
  if (isObject(choice) && typeof choice.type === "string" && !plainChoices.has(choice.type)) {
    const wanted = choice.type.replace(/_preview.*$/, "")
    const offered = arrayOr(body.tools).some((tool) =>
      typeof objectOr(tool).type === "string" && String(objectOr(tool).type).replace(/_preview.*$/, "") === wanted
    )
    if (!offered) {
      return { message: `Tool choice '${choice.type}' not found in 'tools' parameter.`, param: "tool_choice" }
    }
  }
  return undefined
}

const modalities: ReadonlySet<string> = new Set(["TEXT", "IMAGE", "AUDIO"])

/**
 * The first problem of a generate-content body's `generationConfig` for
 * `model` (Gemini 3 and later take `thinkingLevel`).
 *
 * @category checks
 */
export const geminiConfigProblem = (body: Record<string, unknown>, model: string): Problem | undefined => {
  const config = objectOr(field(body, "generationConfig", "generation_config"))
  const thinking = objectOr(field(config, "thinkingConfig", "thinking_config"))
  const level = field(thinking, "thinkingLevel", "thinking_level")
  if (level !== undefined) {
    if (field(thinking, "thinkingBudget", "thinking_budget") !== undefined) {
      return {
        message: "You can only set only one of thinking budget and thinking level.",
        param: "generationConfig.thinkingConfig"
      }
    }
    const major = /^gemini-(\d+)/.exec(model)?.[1]
    if (major === undefined || Number(major) < 3) {
      return { message: "thinking_level is not supported by this model", param: "generationConfig.thinkingConfig" }
    }
  }
  for (const modality of arrayOr(field(config, "responseModalities", "response_modalities"))) {
    if (typeof modality !== "string" || !modalities.has(modality.toUpperCase())) {
      return {
        message: `Invalid value at 'generation_config.response_modalities' (${String(modality)}).`,
        param: "generationConfig.responseModalities"
      }
    }
  }
  return undefined
}
