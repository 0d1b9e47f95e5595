/// <reference lib="dom" />
/**
 * The Files page: the user's files (`GET /v1/files`, newest first, paged by cursor), each with its id, name,
 * purpose, size in bytes, creation and expiry; a download (`GET /v1/files/{id}/content`) and a delete after a
 * confirmation (`DELETE /v1/files/{id}`). Calls go with the browser session alone (`SessionCaller.ts`): the user's
 * own files, whichever key uploaded them.
 */
import { useEffect, useState } from "preact/hooks"
import { wordsOf } from "./api.ts"
import { publicCall } from "./Batches.tsx"
import { FILES } from "./strings.ts"
import { ErrorText, TableScroll, timeText } from "./ui.tsx"

/** The page's words, in the current language. */
const TEXT = FILES

/** Files shown per page. */
const PAGE_LIMIT = 20

/** OpenAI's File object, the fields shown. */
interface FileRow {
  readonly id: string
  readonly filename: string
  readonly purpose: string
  readonly bytes: number
  readonly created_at: number
  readonly expires_at: number | null
}

/** One file's row: its facts, a download and a delete after a confirmation. */
const FileItem = (props: { file: FileRow; onDeleted: (id: string) => void; onError: (words: string) => void }) => {
  const [confirming, setConfirming] = useState(false)
  const { file } = props
  const remove = async () => {
    try {
      await publicCall("DELETE", `/v1/files/${encodeURIComponent(file.id)}`)
      props.onDeleted(file.id)
    } catch (caught) {
      props.onError(wordsOf(caught))
    }
    setConfirming(false)
  }
  return (
    <tr data-testid="file-row" data-file-id={file.id}>
      <td>{file.id}</td>
      <td>{file.filename}</td>
      <td>{file.purpose}</td>
      <td>{TEXT.bytes(file.bytes)}</td>
      <td>{timeText(file.created_at)}</td>
      <td>{timeText(file.expires_at)}</td>
      <td>
        {confirming
          ? (
            <span role="group" aria-label={TEXT.confirmOf(file.id)}>
              {TEXT.confirm(file.filename)} <button type="button" class="danger" onClick={remove}>{TEXT.remove}</button>
              {" "}
              <button type="button" onClick={() => setConfirming(false)}>{TEXT.keep}</button>
            </span>
          )
          : (
            <span>
              <a
                href={`/v1/files/${encodeURIComponent(file.id)}/content`}
                download={file.filename}
                aria-label={TEXT.named(TEXT.download, file.id)}
              >
                {TEXT.download}
              </a>{" "}
              <button type="button" aria-label={TEXT.named(TEXT.remove, file.id)} onClick={() => setConfirming(true)}>
                {TEXT.remove}
              </button>
            </span>
          )}
      </td>
    </tr>
  )
}

/** The Files page. */
export const Files = () => {
  const [cursors, setCursors] = useState<ReadonlyArray<string | null>>([null])
  const [list, setList] = useState<{ data: ReadonlyArray<FileRow>; has_more: boolean; last_id: string | null } | null>(
    null
  )
  const [error, setError] = useState<string | null>(null)
  const [note, setNote] = useState("")
  const [tick, setTick] = useState(0)
  const after = cursors[cursors.length - 1] ?? null

  useEffect(() => {
    let live = true
    const cursor = after === null ? "" : `&after=${encodeURIComponent(after)}`
    publicCall<{ data: ReadonlyArray<FileRow>; has_more: boolean; last_id: string | null }>(
      "GET",
      `/v1/files?limit=${PAGE_LIMIT}&order=desc${cursor}`
    ).then((answer) => live && (setList(answer), setError(null)), (caught) => live && setError(wordsOf(caught)))
    return () => {
      live = false
    }
  }, [after, tick])

  return (
    <section>
      <h1>{TEXT.title}</h1>
      <p class="hint">{TEXT.intro}</p>
      <ErrorText error={error} />
      <p class="hint" role="status">{note}</p>
      <TableScroll label={TEXT.caption(cursors.length)}>
        <table>
          <caption>{TEXT.caption(cursors.length)}</caption>
          <thead>
            <tr>
              <th scope="col">{TEXT.columns.file}</th>
              <th scope="col">{TEXT.columns.name}</th>
              <th scope="col">{TEXT.columns.purpose}</th>
              <th scope="col">{TEXT.columns.bytes}</th>
              <th scope="col">{TEXT.columns.created}</th>
              <th scope="col">{TEXT.columns.expires}</th>
              <th scope="col">{TEXT.columns.actions}</th>
            </tr>
          </thead>
          <tbody>
            {list?.data.map((file) => (
              <FileItem
                key={file.id}
                file={file}
                onError={setError}
                onDeleted={(id) => {
                  setNote(TEXT.deleted(id))
                  setError(null)
                  setTick((value) => value + 1)
                }}
              />
            ))}
          </tbody>
        </table>
      </TableScroll>
      <nav class="pager" aria-label={TEXT.pages}>
        <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors(cursors.slice(0, -1))}>
          {TEXT.newer}
        </button>
        <button
          type="button"
          disabled={!(list?.has_more ?? false) || list?.last_id === null}
          onClick={() => list?.last_id != null && setCursors([...cursors, list.last_id])}
        >
          {TEXT.older}
        </button>
      </nav>
    </section>
  )
}
