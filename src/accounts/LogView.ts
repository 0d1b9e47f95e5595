/**
 * A usage-log row as the `/api/log` routes answer it (`UsageQueries.logs`), and as a request's story lists its
 * attempts (`RequestStory.ts`): in a module of its own, so both import it without importing each other.
 *
 * @since 0.1.0
 */

/**
 * A log row; `channel_id` and `username` only in the admin view;
 * `channel_name` (never a channel key) in both, `null` when no channel
 * answered or it was deleted. Times in epoch seconds.
 *
 * @category models
 */
export interface LogView {
  readonly id: number
  readonly request_id: string
  /** The batch the row's request was a line of (`msgbatch_…`, `batch_…`), else `null`. */
  readonly batch_id: string | null
  readonly attempt: number
  readonly created_at: number
  readonly username?: string | null
  readonly user_id: number
  readonly token_id: number
  readonly token_name: string | null
  readonly model: string
  readonly channel_id?: number | null
  readonly channel_name: string | null
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly cached_tokens: number
  readonly reasoning_tokens: number
  /** Audio tokens among `prompt_tokens` and `completion_tokens` (a Realtime response's). */
  readonly audio_input_tokens: number
  readonly audio_output_tokens: number
  readonly quota: number
  readonly latency_ms: number
  /** A streamed answer's time to first token, milliseconds (`null`: not streamed, or no content came). */
  readonly first_token_ms: number | null
  readonly stream: boolean
  readonly status: number
  readonly error: string | null
}
