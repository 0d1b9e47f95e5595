/**
 * Why a model stopped, in canonical form.
 *
 * @since 0.1.0
 */

/**
 * `stop`: natural end or a stop sequence; `length`: the output token limit;
 * `tool-calls`: the model wants tool results; `content-filter`: refused or
 * filtered; `error`: the upstream failed; `other`: anything else.
 */
export type FinishReason = "stop" | "length" | "tool-calls" | "content-filter" | "error" | "other"
