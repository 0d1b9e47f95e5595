/// <reference lib="dom" />
/**
 * The playground's image and video modes and the task list.
 *
 * - Image: `POST /v1/images/generations` (the image shown at once, with the
 *   cost the ledger charged: the usage log rows of its `x-request-id`), or `POST
 *   /v1/images/generations/async` (a task in the list).
 * - Video: `POST /v1/videos` with model, prompt, seconds and size (a task).
 * - Tasks: `GET /api/task/self`, the user's own tasks newest first, with
 *   status, progress, the cost charged (with its unit) and a preview: the
 *   image of a finished image task (read from `GET
 *   /v1/images/generations/async/{id}`) or a `<video>` playing `GET
 *   /v1/videos/{id}/content`. The list is read again every few seconds while
 *   a task of it runs, and no longer once all are final.
 *
 * Every call goes with the browser session alone (no key), billed to the
 * user's playground token, with the CSRF header on a submit.
 */
import { useEffect, useState } from "preact/hooks"
import { api, type Page, wordsOf } from "./api.ts"
import { usd } from "./money.ts"
import { COMMON, TASKS } from "./strings.ts"
import { ErrorText, Field, Pager, timeText } from "./ui.tsx"

/** A task as `GET /api/task/self` lists it. */
interface TaskRow {
  readonly id: string
  readonly kind: "video" | "image" | "midjourney"
  readonly model: string
  readonly status: string
  readonly progress: number
  readonly created_at: number
  readonly completed_at: number | null
  readonly quota: number
  readonly cost: string
  readonly error: string | null
}

/** One image of an images answer's `data[]`. */
interface ImageItem {
  readonly b64_json?: string
  readonly url?: string
  readonly revised_prompt?: string
}

/** How often the list is read while a task runs (ms). */
const POLL_MILLIS = 2000

/** The message of a public route's error body (`{error: {message}}`), or the status. */
export const errorWords = async (response: Response): Promise<string> => {
  try {
    const body = await response.json()
    const message = body?.error?.message ?? body?.message
    if (typeof message === "string" && message !== "") return message
  } catch {
    // Not JSON: the status says it.
  }
  return COMMON.answered(response.status)
}

/** A JSON call to a public route with the session alone; the answer and its request id, or throws the route's words. */
async function callWithId<A>(method: string, path: string, body?: unknown): Promise<{ body: A; requestId: string }> {
  const headers: Record<string, string> = { accept: "application/json" }
  if (method !== "GET") {
    headers["x-sluice-csrf"] = "1"
    headers["content-type"] = "application/json"
  }
  const response = await fetch(path, {
    method,
    credentials: "same-origin",
    headers,
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  if (!response.ok) throw new Error(await errorWords(response))
  return { body: (await response.json()) as A, requestId: response.headers.get("x-request-id") ?? "" }
}

/** A JSON call to a public route with the session alone; the parsed answer, or throws the route's words. */
async function call<A>(method: string, path: string, body?: unknown): Promise<A> {
  return (await callWithId<A>(method, path, body)).body
}

/** What the ledger charged request `requestId` (its usage log rows summed), as USD with its unit; waits for the log. */
const chargedOf = async (requestId: string): Promise<string> => {
  if (requestId === "") return TASKS.noRequestId
  for (let tries = 0; tries < 40; tries++) {
    const rows = await api<Page<{ quota: number; status: number }>>(
      "GET",
      `/api/log/self?request_id=${encodeURIComponent(requestId)}&page_size=100`
    )
    if (rows.items.some((row) => row.status === 200)) {
      return TASKS.charged(usd(rows.items.reduce((sum, row) => sum + row.quota, 0)))
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return TASKS.costNotYet
}

/**
 * An image of an answer: shown when it is bytes (`b64_json`, or a `data:image/` URL as the gateway writes
 * bytes asked for as a URL); a vendor's URL is only linked (the page loads nothing from another origin).
 */
const ImageView = (props: { item: ImageItem; alt: string }) =>
  props.item.b64_json !== undefined
    ? <img class="generated" src={`data:image/png;base64,${props.item.b64_json}`} alt={props.alt} />
    : props.item.url !== undefined && /^data:image\/(png|jpeg|webp|gif);base64,/.test(props.item.url)
    ? <img class="generated" src={props.item.url} alt={props.alt} />
    : props.item.url !== undefined
    ? <a href={props.item.url} target="_blank" rel="noopener noreferrer">{TASKS.openImage(props.alt)}</a>
    : null

const isFinal = (status: string) => status === "completed" || status === "failed"

/** The preview of a finished task: its image(s), its video, or its Midjourney image. */
const Preview = (props: { task: TaskRow }) => {
  const [images, setImages] = useState<ReadonlyArray<ImageItem> | null>(null)
  const { task } = props
  useEffect(() => {
    if (task.kind !== "image" || task.status !== "completed") return
    call<{ data?: ReadonlyArray<ImageItem> }>("GET", `/v1/images/generations/async/${encodeURIComponent(task.id)}`)
      .then((answer) => setImages(answer.data ?? []), () => setImages([]))
  }, [task.id, task.kind, task.status])
  if (task.status !== "completed") return <span>{task.status === "failed" ? TASKS.none : TASKS.whenDone}</span>
  if (task.kind === "video") {
    return (
      <video
        class="generated"
        controls
        preload="metadata"
        src={`/v1/videos/${encodeURIComponent(task.id)}/content`}
        aria-label={TASKS.video(task.id)}
        data-testid="task-video"
      />
    )
  }
  if (task.kind === "midjourney") {
    // A Midjourney task's image, through the gateway (a describe has none: the alt text stands in).
    return (
      <img
        class="generated"
        src={`/mj/image/${encodeURIComponent(task.id)}`}
        alt={TASKS.image(task.id)}
        data-testid="task-mj-image"
      />
    )
  }
  if (images === null) return <span>{TASKS.loading}</span>
  return (
    <span data-testid="task-image">
      {images.map((item, index) => <ImageView key={index} item={item} alt={TASKS.imageOf(index + 1, task.id)} />)}
    </span>
  )
}

/** The task list: the user's tasks with status, progress, cost and preview; polled while any runs. */
export const TaskList = (props: { refresh: number }) => {
  const [page, setPage] = useState(1)
  const [list, setList] = useState<Page<TaskRow> | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [tick, setTick] = useState(0)

  useEffect(() => {
    let live = true
    api<Page<TaskRow>>("GET", `/api/task/self?page=${page}&page_size=10`).then(
      (answer) => live && (setList(answer), setError(null)),
      (caught) => live && setError(wordsOf(caught))
    )
    return () => {
      live = false
    }
  }, [page, props.refresh, tick])

  const running = list?.items.some((task) => !isFinal(task.status)) ?? false
  useEffect(() => {
    if (!running) return
    const timer = setTimeout(() => setTick((value) => value + 1), POLL_MILLIS)
    return () => clearTimeout(timer)
  }, [running, list])

  const pages = list === null ? 1 : Math.max(1, Math.ceil(list.total / list.page_size))
  return (
    <section class="panel" aria-labelledby="tasks-heading">
      <h2 id="tasks-heading">{TASKS.title}</h2>
      <ErrorText error={error} />
      <p class="hint" aria-live="polite">{running ? TASKS.running : ""}</p>
      <table>
        <caption>{TASKS.caption(list?.total ?? 0)}</caption>
        <thead>
          <tr>
            <th scope="col">{TASKS.columns.task}</th>
            <th scope="col">{TASKS.columns.kind}</th>
            <th scope="col">{TASKS.columns.model}</th>
            <th scope="col">{TASKS.columns.status}</th>
            <th scope="col">{TASKS.columns.progress}</th>
            <th scope="col">{TASKS.columns.created}</th>
            <th scope="col">{TASKS.columns.cost}</th>
            <th scope="col">{TASKS.columns.preview}</th>
          </tr>
        </thead>
        <tbody>
          {list?.items.map((task) => (
            <tr key={task.id} data-testid="task-row">
              <td>{task.id}</td>
              <td>{task.kind}</td>
              <td>{task.model}</td>
              <td data-testid="task-status">{task.status}{task.error === null ? "" : ` (${task.error})`}</td>
              <td>
                <progress max={100} value={task.progress} aria-label={TASKS.progressOf(task.id)} /> {task.progress}%
              </td>
              <td>{timeText(task.created_at)}</td>
              <td data-testid="task-cost">{task.cost}</td>
              <td>
                <Preview task={task} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager label={TASKS.pages} page={page} pages={pages} setPage={setPage} />
    </section>
  )
}

/** The model picker shared by the modes. */
const ModelField = (props: { models: ReadonlyArray<string> | null; model: string; setModel: (m: string) => void }) => (
  <Field label={TASKS.model}>
    <select
      name="model"
      value={props.model}
      onChange={(e) => props.setModel(e.currentTarget.value)}
      disabled={!props.models}
    >
      {props.models?.length === 0 && <option value="">{TASKS.noModel}</option>}
      {props.models?.map((id) => <option key={id} value={id}>{id}</option>)}
    </select>
  </Field>
)

/** Image mode: generate now (shown here) or as a task (in the list). */
export const ImageMode = (props: { models: ReadonlyArray<string> | null; onTask: () => void }) => {
  const [model, setModel] = useState(props.models?.[0] ?? "")
  const [prompt, setPrompt] = useState("")
  const [size, setSize] = useState("")
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const [images, setImages] = useState<ReadonlyArray<ImageItem>>([])
  const [note, setNote] = useState("")

  // Bytes rather than a vendor URL, so the page can show the image (the gateway drops it for GPT image models).
  const body = () => ({
    model,
    prompt,
    response_format: "b64_json",
    ...(size.trim() === "" ? {} : { size: size.trim() })
  })
  const generate = async (event: Event) => {
    event.preventDefault()
    if (prompt.trim() === "" || model === "") return
    setBusy(true)
    setError(null)
    setNote("")
    try {
      const answer = await callWithId<{ data?: ReadonlyArray<ImageItem> }>("POST", "/v1/images/generations", body())
      const made = answer.body.data ?? []
      setImages(made)
      setNote(TASKS.generated(made.length, TASKS.readingCost))
      setNote(TASKS.generated(made.length, await chargedOf(answer.requestId)))
    } catch (caught) {
      setError(wordsOf(caught))
    } finally {
      setBusy(false)
    }
  }
  const submitTask = async () => {
    if (prompt.trim() === "" || model === "") return
    setBusy(true)
    setError(null)
    setNote("")
    try {
      const answer = await call<{ id: string }>("POST", "/v1/images/generations/async", body())
      setNote(TASKS.submitted(answer.id))
      props.onTask()
    } catch (caught) {
      setError(wordsOf(caught))
    } finally {
      setBusy(false)
    }
  }
  return (
    <form class="panel" onSubmit={generate} aria-label={TASKS.imageForm}>
      <ErrorText error={error} />
      <ModelField models={props.models} model={model} setModel={setModel} />
      <Field label={TASKS.prompt}>
        <textarea name="prompt" rows={3} value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} />
      </Field>
      <Field label={TASKS.imageSize}>
        <input name="size" value={size} onInput={(e) => setSize(e.currentTarget.value)} />
      </Field>
      <button type="submit" disabled={busy || !model}>{busy ? TASKS.working : TASKS.generate}</button>{" "}
      <button type="button" disabled={busy || !model} onClick={submitTask}>{TASKS.asTask}</button>
      <p class="hint" role="status" data-testid="image-note">{note}</p>
      <div class="images" data-testid="generated-images">
        {images.map((item, index) => <ImageView key={index} item={item} alt={TASKS.generatedImage(index + 1)} />)}
      </div>
    </form>
  )
}

/** Video mode: submit a video task (model, prompt, seconds, size); it appears in the list. */
export const VideoMode = (props: { models: ReadonlyArray<string> | null; onTask: () => void }) => {
  const [model, setModel] = useState(props.models?.[0] ?? "")
  const [prompt, setPrompt] = useState("")
  const [seconds, setSeconds] = useState("4")
  const [size, setSize] = useState("")
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const [note, setNote] = useState("")

  const submit = async (event: Event) => {
    event.preventDefault()
    if (prompt.trim() === "" || model === "") return
    setBusy(true)
    setError(null)
    setNote("")
    try {
      const answer = await call<{ id: string }>("POST", "/v1/videos", {
        model,
        prompt,
        ...(seconds.trim() === "" ? {} : { seconds: seconds.trim() }),
        ...(size.trim() === "" ? {} : { size: size.trim() })
      })
      setNote(TASKS.submitted(answer.id))
      props.onTask()
    } catch (caught) {
      setError(wordsOf(caught))
    } finally {
      setBusy(false)
    }
  }
  return (
    <form class="panel" onSubmit={submit} aria-label={TASKS.videoForm}>
      <ErrorText error={error} />
      <ModelField models={props.models} model={model} setModel={setModel} />
      <Field label={TASKS.prompt}>
        <textarea name="prompt" rows={3} value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} />
      </Field>
      <Field label={TASKS.seconds}>
        <input name="seconds" inputMode="numeric" value={seconds} onInput={(e) => setSeconds(e.currentTarget.value)} />
      </Field>
      <Field label={TASKS.videoSize}>
        <input name="size" value={size} onInput={(e) => setSize(e.currentTarget.value)} />
      </Field>
      <button type="submit" disabled={busy || !model}>{busy ? TASKS.submitting : TASKS.submitVideo}</button>
      <p class="hint" role="status">{note}</p>
    </form>
  )
}
