/**
 * Tasks (`GET /api/task/self`): the signed-in user's own asynchronous tasks
 * (videos, images made as tasks, Midjourney) with kind, model, status,
 * progress, creation and completion times and the cost charged. The list is
 * paged, searched (the start of a task id, or text in the model), filtered
 * (status, kind, exact model, a UTC date range of creation) and sorted on the
 * server, its view kept in the hash's query, so a reload or a shared link
 * shows the same rows. The playground's task list shows previews; this page
 * loads none, so a long list costs one API call a page.
 */
import { apiQuery, dayRange, useHashView } from "./hashQuery.ts"
import { ChoiceField, FilterForm, SortHeader, useServerPage } from "./listControls.tsx"
import { TASK_LIST } from "./strings.ts"
import { ErrorText, Field, Pager, timeText } from "./ui.tsx"

/** A task as `GET /api/task/self` lists it. */
interface TaskRow {
  readonly id: string
  readonly kind: string
  readonly model: string
  readonly status: string
  readonly progress: number
  readonly created_at: number
  readonly completed_at: number | null
  readonly quota: number
  readonly cost: string
  readonly error: string | null
}

/** The list's view, as the hash's query holds it (`from` and `to` are UTC dates, `YYYY-MM-DD`). */
const VIEW = {
  keyword: "",
  status: "",
  kind: "",
  model: "",
  from: "",
  to: "",
  sort: "created_at",
  order: "desc",
  page: "1"
}

/** The view's fields the filter form sets. */
const TASK_FILTERS = ["keyword", "status", "kind", "model", "from", "to"] as const

/** The API's query of `view`: the dates as epoch seconds, the end date included. */
const taskQuery = (view: typeof VIEW): string => {
  const { from, to, ...rest } = view
  return apiQuery({ ...rest, ...dayRange(from, to) })
}

/** The filter form: its own drafts, applied on submit. */
const TaskFilters = (props: { view: typeof VIEW; onApply: (change: Partial<typeof VIEW>) => void }) => (
  <FilterForm label={TASK_LIST.filters} view={props.view} fields={TASK_FILTERS} onApply={props.onApply}>
    {(draft, set) => (
      <>
        <Field label={TASK_LIST.keyword}>
          <input name="keyword" maxLength={100} value={draft.keyword} onInput={set("keyword")} />
        </Field>
        <ChoiceField
          label={TASK_LIST.status}
          name="status"
          value={draft.status}
          onChange={set("status")}
          options={Object.entries(TASK_LIST.statuses)}
        />
        <ChoiceField
          label={TASK_LIST.kind}
          name="kind"
          value={draft.kind}
          onChange={set("kind")}
          options={Object.entries(TASK_LIST.kinds)}
        />
        <Field label={TASK_LIST.model}>
          <input name="model" value={draft.model} onInput={set("model")} />
        </Field>
        <Field label={TASK_LIST.from}>
          <input name="from" type="date" value={draft.from} onInput={set("from")} />
        </Field>
        <Field label={TASK_LIST.to}>
          <input name="to" type="date" value={draft.to} onInput={set("to")} />
        </Field>
      </>
    )}
  </FilterForm>
)

/** The tasks page. */
export const Tasks = () => {
  const [view, change] = useHashView(VIEW)
  const { listing, pages, error } = useServerPage<TaskRow>("/api/task/self", taskQuery(view))
  const sortable = (label: string, column: string) => (
    <SortHeader
      label={label}
      column={column}
      sort={view.sort}
      order={view.order}
      onSort={(sort, order) => change({ sort, order })}
    />
  )
  const columns = TASK_LIST.columns
  return (
    <section>
      <h1>{TASK_LIST.title}</h1>
      <p>{TASK_LIST.intro}</p>
      <TaskFilters view={view} onApply={change} />
      <ErrorText error={error} />
      <div class="scroll">
        <table>
          <caption>{TASK_LIST.caption(listing?.total ?? 0)}</caption>
          <thead>
            <tr>
              <th scope="col">{columns.task}</th>
              {sortable(columns.kind, "kind")}
              {sortable(columns.model, "model")}
              {sortable(columns.status, "status")}
              {sortable(columns.progress, "progress")}
              {sortable(columns.created, "created_at")}
              {sortable(columns.completed, "completed_at")}
              {sortable(columns.cost, "quota")}
            </tr>
          </thead>
          <tbody>
            {listing?.items.map((task) => (
              <tr key={task.id} data-testid="task-row">
                <td>
                  <code>{task.id}</code>
                </td>
                <td>{task.kind}</td>
                <td>{task.model}</td>
                <td data-testid="task-status">{task.status}{task.error === null ? "" : ` (${task.error})`}</td>
                <td>
                  <progress max={100} value={task.progress} aria-label={TASK_LIST.progressOf(task.id)} />{" "}
                  {task.progress}%
                </td>
                <td>{timeText(task.created_at)}</td>
                <td>{task.completed_at === null ? "" : timeText(task.completed_at)}</td>
                <td data-testid="task-cost">{task.cost}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Pager
        label={TASK_LIST.pages}
        page={Number(view.page) || 1}
        pages={pages}
        setPage={(page) => change({ page: String(page) })}
      />
    </section>
  )
}
