/**
 * A request's story, opened from a usage-log row (`GET /api/log/self/{id}`,
 * admins `GET /api/log/{id}`): each attempt in order — channel, the
 * upstream's status, the failure in words, latency, tokens by kind (cached
 * input, reasoning, audio) and cost —, the failover path, the total charged,
 * the model's list prices and the request id to grep the access log for.
 */
import { useEffect, useState } from "preact/hooks"
import { api, wordsOf } from "./api.ts"
import { usd } from "./money.ts"
import { COMMON, STORY } from "./strings.ts"
import { ErrorText, TableScroll } from "./ui.tsx"

/** One row of a request, as the story lists it. */
interface Attempt {
  readonly id: number
  readonly attempt: number
  readonly channel_name: string | null
  readonly status: number
  readonly error: string | null
  readonly latency_ms: number
  readonly first_token_ms: number | null
  readonly prompt_tokens: number
  readonly cached_tokens: number
  readonly completion_tokens: number
  readonly reasoning_tokens: number
  readonly audio_input_tokens: number
  readonly audio_output_tokens: number
  readonly quota: number
}

/** The story as the API answers it. */
interface Story {
  readonly request_id: string
  readonly model: string
  readonly attempts: ReadonlyArray<Attempt>
  readonly failover_path: ReadonlyArray<string | null>
  readonly quota: number
  readonly prices: {
    readonly input: number | null
    readonly output: number | null
    readonly cached_input: number | null
    readonly cache_write: number | null
    readonly free: boolean
  } | null
}

const price = (value: number | null | undefined) =>
  value === null || value === undefined ? STORY.notPriced : `$${value}`

/** The story of request `requestId`, with a close button. */
export const RequestStory = (props: { requestId: string; admin: boolean; onClose: () => void }) => {
  const [story, setStory] = useState<Story | null>(null)
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    const path = props.admin ? "/api/log/" : "/api/log/self/"
    api<Story>("GET", `${path}${encodeURIComponent(props.requestId)}`).then(setStory, (c) => setError(wordsOf(c)))
  }, [props.requestId])
  const columns = STORY.columns
  return (
    <section class="panel" aria-label={STORY.title(props.requestId)}>
      <h2>{STORY.title(props.requestId)}</h2>
      <button type="button" onClick={props.onClose}>{STORY.close}</button>
      <ErrorText error={error} />
      {story === null && error === null && <p>{STORY.loading}</p>}
      {story !== null && (
        <>
          <p>
            {STORY.grep} <code data-testid="story-request-id">{story.request_id}</code>
          </p>
          <p data-testid="story-path">
            {STORY.path}: {story.failover_path.length === 0
              ? STORY.pathNone
              : story.failover_path.map((name) => name ?? COMMON.deleted).join(" → ")}
          </p>
          <p data-testid="story-total">{STORY.total}: {usd(story.quota)}</p>
          <p>
            {STORY.prices}: {story.model} {story.prices?.free ? STORY.free : STORY.listed(
              price(story.prices?.input),
              price(story.prices?.output),
              price(story.prices?.cached_input),
              price(story.prices?.cache_write)
            )}
          </p>
          <TableScroll label={STORY.attempts}>
            <table>
              <caption>{STORY.attempts}</caption>
              <thead>
                <tr>
                  <th scope="col">{columns.attempt}</th>
                  <th scope="col">{columns.channel}</th>
                  <th scope="col">{columns.status}</th>
                  <th scope="col">{columns.failure}</th>
                  <th scope="col">{columns.latency}</th>
                  <th scope="col">{columns.input}</th>
                  <th scope="col">{columns.output}</th>
                  <th scope="col">{columns.audio}</th>
                  <th scope="col">{columns.cost}</th>
                </tr>
              </thead>
              <tbody>
                {story.attempts.map((row) => (
                  <tr key={row.id} data-testid="story-attempt">
                    <td>{row.attempt === 0 ? STORY.adjustment : row.attempt}</td>
                    <td>{row.channel_name ?? "—"}</td>
                    <td>{row.status}</td>
                    <td>{row.error ?? "—"}</td>
                    <td>
                      {row.latency_ms} ms{row.first_token_ms === null ? "" : STORY.firstToken(row.first_token_ms)}
                    </td>
                    <td>{row.prompt_tokens} ({row.cached_tokens})</td>
                    <td>{row.completion_tokens} ({row.reasoning_tokens})</td>
                    <td>{row.audio_input_tokens} / {row.audio_output_tokens}</td>
                    <td>{usd(row.quota)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableScroll>
        </>
      )}
    </section>
  )
}
