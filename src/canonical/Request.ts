/**
 * A generation request in canonical form: the superset of what the inbound
 * formats can say (docs/ARCHITECTURE.md, "Formats and the canonical form").
 *
 * @since 0.1.0
 */
import type { CacheBreakpoint, Part } from "./Content.ts"

/**
 * One turn. `system` carries system and developer instructions wherever they
 * stood; `tool` carries `tool-result` parts only.
 */
export interface Message {
  readonly role: "system" | "user" | "assistant" | "tool"
  readonly content: ReadonlyArray<Part>
  /** True for an OpenAI `developer` message, so it can be re-emitted as such. */
  readonly developer?: boolean | undefined
}

/**
 * A function tool the model may call; `parameters` is a JSON Schema object; `cache` marks a prompt-cache breakpoint
 * after this definition (`CacheBreakpoint`).
 */
export interface FunctionTool {
  readonly type: "function"
  readonly name: string
  readonly description?: string | undefined
  readonly parameters: Readonly<Record<string, unknown>>
  readonly strict?: boolean | undefined
  readonly cache?: CacheBreakpoint | undefined
}

/**
 * A vendor built-in tool (web search, code execution, …) passed through as the
 * inbound format wrote it; `format` names that format so only an upstream of
 * the same format receives it.
 */
export interface BuiltinTool {
  readonly type: "builtin"
  readonly format: string
  readonly definition: Readonly<Record<string, unknown>>
}

/** A tool definition. */
export type Tool = FunctionTool | BuiltinTool

/** How the model may use tools. */
export type ToolChoice =
  | { readonly type: "auto" }
  | { readonly type: "none" }
  | { readonly type: "required" }
  | { readonly type: "tool"; readonly name: string }

/** The requested output shape. `schema` is a JSON Schema object. */
export type ResponseFormat =
  | { readonly type: "text" }
  | { readonly type: "json_object" }
  | {
    readonly type: "json_schema"
    readonly name: string
    readonly schema: Readonly<Record<string, unknown>>
    readonly strict?: boolean | undefined
    readonly description?: string | undefined
  }

/** Reasoning effort levels (spec: `reasoning_effort`). */
export type ReasoningEffort = "none" | "minimal" | "low" | "medium" | "high" | "xhigh"

/**
 * Reasoning settings: an effort level and/or a token budget (messages
 * `thinking.budget_tokens`, generate-content `thinkingConfig.thinkingBudget`).
 * `enabled: false` turns reasoning off explicitly.
 */
export interface ReasoningConfig {
  readonly enabled?: boolean | undefined
  readonly effort?: ReasoningEffort | undefined
  readonly budgetTokens?: number | undefined
  /** Ask for reasoning text in the answer (generate-content `includeThoughts`, Responses `summary`). */
  readonly includeThoughts?: boolean | undefined
}

/**
 * Something in the caller's body the canonical form cannot hold, which only an
 * upstream of the caller's own format can take as sent (a chat `video_url`
 * part, a `file_id` reference, a Responses `item_reference`): `param` names
 * the field as the caller wrote it (`messages[0].content[1]`), `message` says
 * why a translation cannot carry it. Decoders leave it out of the canonical
 * messages and list it here; a same-format channel gets the caller's body with
 * it, and a translation of the request is refused naming it.
 */
export interface Untranslatable {
  readonly param: string
  readonly message: string
}

/**
 * The canonical request. Token counts are tokens; `temperature`, `topP` as the
 * formats define them (0–2, 0–1).
 */
export interface Request {
  readonly model: string
  readonly messages: ReadonlyArray<Message>
  readonly tools?: ReadonlyArray<Tool> | undefined
  readonly toolChoice?: ToolChoice | undefined
  readonly parallelToolCalls?: boolean | undefined
  readonly maxOutputTokens?: number | undefined
  readonly temperature?: number | undefined
  readonly topP?: number | undefined
  readonly topK?: number | undefined
  readonly stopSequences?: ReadonlyArray<string> | undefined
  readonly seed?: number | undefined
  readonly presencePenalty?: number | undefined
  readonly frequencyPenalty?: number | undefined
  readonly responseFormat?: ResponseFormat | undefined
  readonly reasoning?: ReasoningConfig | undefined
  readonly stream: boolean
  /** End-user id for abuse tracking (OpenAI `user`, messages `metadata.user_id`). */
  readonly user?: string | undefined
  readonly metadata?: Readonly<Record<string, string>> | undefined
  /** Whether the upstream may keep the exchange (Responses and chat completions `store`). */
  readonly store?: boolean | undefined
  /** Extra output data asked for, by the vendor's names (Responses `include`, e.g. `reasoning.encrypted_content`). */
  readonly include?: ReadonlyArray<string> | undefined
  /** How long the answer should be (Responses `text.verbosity`, chat completions `verbosity`). */
  readonly verbosity?: "low" | "medium" | "high" | undefined
  /**
   * Stream events padded with an `obfuscation` field (`stream_options.include_obfuscation`); `undefined` is the
   * vendor's default, on.
   */
  readonly includeObfuscation?: boolean | undefined
  /**
   * Answers asked for at once (chat `n`, a legacy-completions batch of prompts), each of which may take
   * `maxOutputTokens`; absent means one. More than one reaches only a same-format channel (it is listed in
   * `untranslatable` too); the quota hold covers every answer.
   */
  readonly choices?: number | undefined
  /** What only a same-format channel can take (see `Untranslatable`); absent or empty when nothing. */
  readonly untranslatable?: ReadonlyArray<Untranslatable> | undefined
}
