/// <reference lib="dom" />
/**
 * The playground: pick a model the user's group can use (`GET /v1/models`),
 * chat with it, streamed (`POST /v1/chat/completions` with `stream: true`),
 * and see each answer's tokens and its cost as the ledger charged it (the
 * usage log rows of that request, `GET /api/log/self?request_id=…`, the id
 * from the answer's `x-request-id` header). A mode switch turns it to images
 * or video (`PlaygroundTasks.tsx`): generate an image, submit a video task,
 * and follow the user's tasks with their status, progress, cost and preview.
 *
 * The page sends no key: the public routes it calls accept the browser session when
 * no key is sent, billed to the user's playground token (see the gateway's
 * `routes/SessionCaller.ts`), so the session cookie stays the only credential
 * the page holds.
 */
import { useEffect, useRef, useState } from "preact/hooks"
import { api, type Page, wordsOf } from "./api.ts"
import { usd } from "./money.ts"
import { errorWords, ImageMode, TaskList, VideoMode } from "./PlaygroundTasks.tsx"
import { COMMON, PLAYGROUND } from "./strings.ts"
import { ErrorText, Field } from "./ui.tsx"

/** One message of the conversation; an answer also carries its request id and, once known, its usage. */
interface Turn {
  readonly role: "user" | "assistant"
  readonly content: string
  readonly requestId?: string
  readonly usage?: string
}

/** The usage log rows of one request, as `/api/log/self` lists them. */
interface LogRow {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly quota: number
  readonly status: number
  readonly channel_name: string | null
}

/** The ledger's view of `requestId`: every attempt's cost summed, tokens of the answer; waits for the log to be written. */
const ledgerOf = async (requestId: string): Promise<string> => {
  for (let tries = 0; tries < 40; tries++) {
    const rows = await api<Page<LogRow>>(
      "GET",
      `/api/log/self?request_id=${encodeURIComponent(requestId)}&page_size=100`
    )
    const answered = rows.items.find((row) => row.status === 200)
    if (answered !== undefined) {
      const cost = rows.items.reduce((sum, row) => sum + row.quota, 0)
      return PLAYGROUND.usage(
        answered.prompt_tokens,
        answered.completion_tokens,
        usd(cost),
        answered.channel_name ?? PLAYGROUND.unknown
      )
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return PLAYGROUND.notYet
}

/** Reads an OpenAI chat completions event stream, calling `onData` with each event's JSON until `[DONE]`. */
const readEvents = async (body: ReadableStream<Uint8Array>, onData: (data: unknown) => void) => {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return
    buffer += decoder.decode(value, { stream: true })
    let end: number
    while ((end = buffer.search(/\r?\n\r?\n/)) !== -1) {
      const event = buffer.slice(0, end)
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "")
      const data = event.split(/\r?\n/).filter((line) => line.startsWith("data:")).map((line) =>
        line.slice(5).trimStart()
      ).join("\n")
      if (data === "[DONE]") return
      if (data !== "") onData(JSON.parse(data))
    }
  }
}

/** What the playground does. */
type Mode = "chat" | "image" | "video"

/** The modes in the order the switch shows them (each one's label is `PLAYGROUND.modes[mode]`). */
const MODES: ReadonlyArray<Mode> = ["chat", "image", "video"]

/** The playground page. */
export const Playground = () => {
  const [mode, setMode] = useState<Mode>("chat")
  const [submitted, setSubmitted] = useState(0)
  const [models, setModels] = useState<ReadonlyArray<string> | null>(null)
  const [model, setModel] = useState("")
  const [draft, setDraft] = useState("")
  const [turns, setTurns] = useState<ReadonlyArray<Turn>>([])
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const input = useRef<HTMLTextAreaElement>(null)

  useEffect(() => {
    fetch("/v1/models", { headers: { accept: "application/json" }, credentials: "same-origin" }).then(
      async (response) => {
        if (!response.ok) return setError(await errorWords(response))
        const list = ((await response.json()) as { data: ReadonlyArray<{ id: string }> }).data.map((item) => item.id)
        setModels(list)
        setModel(list[0] ?? "")
      },
      () => setError(COMMON.unreachable)
    )
  }, [])

  const send = async (event: Event) => {
    event.preventDefault()
    if (draft.trim() === "" || model === "") return
    setError(null)
    setBusy(true)
    const asked: ReadonlyArray<Turn> = [...turns, { role: "user", content: draft }]
    const history = asked.map((turn) => ({ role: turn.role, content: turn.content }))
    setTurns([...asked, { role: "assistant", content: "" }])
    setDraft("")
    let answer = ""
    let id = ""
    const show = (extra: Partial<Turn> = {}) =>
      setTurns([...asked, { role: "assistant", content: answer, requestId: id, ...extra }])
    try {
      const response = await fetch("/v1/chat/completions", {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json", accept: "text/event-stream", "x-sluice-csrf": "1" },
        body: JSON.stringify({ model, messages: history, stream: true, stream_options: { include_usage: true } })
      })
      if (!response.ok || response.body === null) {
        setTurns(asked)
        setError(await errorWords(response))
        return
      }
      let failed: string | null = null
      await readEvents(response.body, (data) => {
        const chunk = data as {
          id?: string
          error?: { message?: string }
          choices?: ReadonlyArray<{ delta?: { content?: string | null } }>
        }
        if (chunk.error !== undefined) failed = chunk.error.message ?? PLAYGROUND.stopped
        if (typeof chunk.id === "string") id = chunk.id
        const piece = chunk.choices?.[0]?.delta?.content
        if (typeof piece === "string" && piece !== "") {
          answer += piece
          show()
        }
      })
      if (failed !== null) setError(failed)
      // The gateway's request id (the usage log's), which the page lets the gateway make.
      const requestId = response.headers.get("x-request-id") ?? id.replace(/^chatcmpl-/, "")
      show({ usage: PLAYGROUND.reading })
      show({ usage: requestId === "" ? PLAYGROUND.noId : await ledgerOf(requestId) })
    } catch (caught) {
      setError(wordsOf(caught))
    } finally {
      setBusy(false)
      input.current?.focus()
    }
  }

  return (
    <section>
      <h1>{PLAYGROUND.title}</h1>
      <p class="hint">
        {PLAYGROUND.hintBefore}
        <em>{PLAYGROUND.hintKey}</em>
        {PLAYGROUND.hintAfter}
      </p>
      <ErrorText error={error} />
      <fieldset class="modes">
        <legend>{PLAYGROUND.mode}</legend>
        {MODES.map((value) => (
          <label key={value}>
            <input
              type="radio"
              name="mode"
              value={value}
              checked={mode === value}
              onChange={() => setMode(value)}
            />{" "}
            {PLAYGROUND.modes[value]}
          </label>
        ))}
      </fieldset>
      {mode === "image" && <ImageMode models={models} onTask={() => setSubmitted((n) => n + 1)} />}
      {mode === "video" && <VideoMode models={models} onTask={() => setSubmitted((n) => n + 1)} />}
      {mode !== "chat" && <TaskList refresh={submitted} />}
      <form class="panel" onSubmit={send} aria-label={PLAYGROUND.chat} hidden={mode !== "chat"}>
        <Field label={PLAYGROUND.model}>
          <select name="model" value={model} onChange={(e) => setModel(e.currentTarget.value)} disabled={!models}>
            {models?.length === 0 && <option value="">{PLAYGROUND.noModel}</option>}
            {models?.map((id) => <option key={id} value={id}>{id}</option>)}
          </select>
        </Field>
        <ol class="chat" aria-label={PLAYGROUND.conversation} aria-live="polite">
          {turns.map((turn, index) => (
            <li key={index} class={turn.role}>
              <strong>{turn.role === "user" ? PLAYGROUND.you : PLAYGROUND.assistant}:</strong>{" "}
              <span data-testid={turn.role === "assistant" ? "answer" : undefined}>{turn.content}</span>
              {turn.usage !== undefined && <p class="usage" data-testid="answer-usage">{turn.usage}</p>}
            </li>
          ))}
        </ol>
        <Field label={PLAYGROUND.message}>
          <textarea
            ref={input}
            name="message"
            rows={3}
            value={draft}
            onInput={(e) => setDraft(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" disabled={busy || !model}>{busy ? PLAYGROUND.answering : PLAYGROUND.send}</button>{" "}
        <button type="button" disabled={busy || turns.length === 0} onClick={() => setTurns([])}>
          {PLAYGROUND.newConversation}
        </button>
      </form>
    </section>
  )
}
