/**
 * The signed-in user's own asynchronous tasks (video generations, async image
 * generations, Midjourney tasks): `GET /api/task/self`, paginated with `page` and
 * `page_size` (`domain/Page.ts`); `keyword` (the start of the task id, or
 * text in the model), `status` (`queued`, `in_progress`, `completed`,
 * `failed`), `kind` (`video`, `image`, `midjourney`), `model` (exactly),
 * `start_timestamp` and `end_timestamp` (epoch seconds of creation, start
 * inclusive, end exclusive), `sort` (`TASK_SORTS`) and `order` (`asc`,
 * `desc`; newest first by default); a bad one is refused in the api envelope
 * with the field named. Each row is the task's public id, kind,
 * model, status, progress (0–100), created and completed time (epoch
 * seconds), and what it was charged: `quota` in quota units (micro-USD, the
 * net after any refund or re-pricing) and `cost`, the same amount as USD text
 * with its unit (`"0.400000 USD"`). Never the upstream's task id, and never
 * another user's task: the query is the session user's alone.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import { Sessions } from "../../accounts/Sessions.ts"
import {
  type Task,
  TASK_KINDS,
  TASK_SORTS,
  TASK_STATUSES,
  type TaskKind,
  type TaskQuery,
  TaskStore
} from "../../tasks/TaskStore.ts"
import { makeGuards, ok, pageOf, queryOf, queryText, respondApi } from "./Api.ts"
import { ORDERS, queryChoice, querySeconds } from "./ListQuery.ts"

/**
 * One task as `GET /api/task/self` lists it.
 *
 * @category models
 */
export interface TaskRowView {
  readonly id: string
  readonly kind: TaskKind
  readonly model: string
  readonly status: string
  readonly progress: number
  /** Epoch seconds. */
  readonly created_at: number
  /** Epoch seconds, `null` while the task runs. */
  readonly completed_at: number | null
  /** Quota units (micro-USD) charged, net of refunds. */
  readonly quota: number
  /** `quota` as USD text with its unit, every digit the ledger holds. */
  readonly cost: string
  /** The task's error code when it failed (the gateway's words, never the vendor's raw text). */
  readonly error: string | null
}

/**
 * Quota units (micro-USD) as USD text with its unit: `400000n` → `"0.400000 USD"`.
 *
 * @category views
 */
export const usdText = (units: bigint): string => {
  const sign = units < 0n ? "-" : ""
  const whole = units < 0n ? -units : units
  return `${sign}${whole / 1_000_000n}.${(whole % 1_000_000n).toString().padStart(6, "0")} USD`
}

/**
 * A stored task as the list shows it (no upstream id, request, result or billing detail).
 *
 * @category views
 */
export const taskRowOf = (task: Task): TaskRowView => ({
  id: task.publicId,
  kind: task.kind,
  model: task.model,
  status: task.status,
  progress: task.progress,
  created_at: Math.floor(task.createdAt / 1000),
  completed_at: task.completedAt === null ? null : Math.floor(task.completedAt / 1000),
  quota: Number(task.quotaCharged),
  cost: usdText(task.quotaCharged),
  error: task.errorCode
})

const taskQueryOf = (query: URLSearchParams) =>
  Effect.gen(function* () {
    const taskQuery: TaskQuery = {
      keyword: yield* queryText(query.get("keyword"), "keyword", 100),
      status: yield* queryChoice(query.get("status"), "status", TASK_STATUSES),
      kind: yield* queryChoice(query.get("kind"), "kind", TASK_KINDS),
      model: yield* queryText(query.get("model"), "model", 256),
      start: yield* querySeconds(query.get("start_timestamp"), "start_timestamp"),
      end: yield* querySeconds(query.get("end_timestamp"), "end_timestamp"),
      sort: yield* queryChoice(query.get("sort"), "sort", TASK_SORTS),
      order: yield* queryChoice(query.get("order"), "order", ORDERS)
    }
    return taskQuery
  })

/** @category routes */
export const TaskRoutes = HttpRouter.use(Effect.fnUntraced(function* (router) {
  const store = yield* TaskStore
  const guards = makeGuards(yield* Sessions)

  yield* router.add("GET", "/api/task/self", (request) =>
    Effect.gen(function* () {
      const caller = yield* guards.user(request)
      const page = yield* pageOf(request)
      const query = yield* taskQueryOf(queryOf(request))
      const { tasks, total } = yield* store.listOwn(caller.id, page, query)
      return ok({ items: tasks.map(taskRowOf), total, page: page.page, page_size: page.size })
    }).pipe(respondApi))
}))
