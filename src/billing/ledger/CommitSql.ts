/**
 * What one ledger commit writes (`CommitBatcher`), in either of its two
 * shapes: the statements of a transaction (`writeDeltas`: charges on users
 * and tokens, budget spend and its threshold events, low-balance events,
 * the leases lowered by what was charged or handed back), or one statement
 * (`singleStatement`: the commit id claimed, and only if it was, the usage
 * rows and the same changes but budget spend).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { insertUsageRows } from "../../storage/UsageRowsSql.ts"
import {
  enqueueBudgetThresholds,
  enqueueLowBalances,
  lowBalanceEvents,
  type SpendMove
} from "../../services/WebhookOutbox.ts"
import type { Taken } from "./LeaseMath.ts"

/** The entries of `taken` the commit writes per table: charged users, charged tokens, and limited accounts' leases. */
const split = (taken: ReadonlyArray<Taken>) => ({
  users: taken.filter((entry) => entry.account.subject === "user" && entry.charged > 0n),
  tokens: taken.filter((entry) => entry.account.subject === "token" && entry.charged > 0n),
  leases: taken.filter((entry) => entry.account.limited)
})

const ids = (entries: ReadonlyArray<Taken>) => entries.map((entry) => String(entry.account.id))

/** Whether the batch charged a budget window: its spend comes back to raise threshold events (the statements). */
export const chargesBudgets = (taken: ReadonlyArray<Taken>): boolean =>
  taken.some((entry) => entry.account.subject === "budget" && entry.charged > 0n)

/**
 * Adds the charges of budget accounts to their windows' `spent` (the same transaction as the usage rows),
 * and raises a `budget.threshold` webhook event for each threshold the spend crossed, in that transaction too.
 */
const writeBudgetSpend = (sql: SqlClient.SqlClient, taken: ReadonlyArray<Taken>) =>
  Effect.suspend(() => {
    const spent = taken.filter((entry) => entry.account.subject === "budget" && entry.charged > 0n)
    if (spent.length === 0) return Effect.void
    // The rows are the outbox's spend moves, the window's id under its column name.
    return sql<
      Omit<SpendMove, "periodId"> & { readonly id: bigint }
    >`UPDATE budget_periods p SET spent = p.spent + d.charged
      FROM unnest(${spent.map((entry) => String(entry.account.id))}::bigint[],
        ${spent.map((entry) => String(entry.charged))}::bigint[]) AS d(id, charged)
      WHERE p.id = d.id
      RETURNING p.id, p.subject, p.subject_id AS "subjectId", p.period, p.period_start AS "periodStart",
        p.period_end AS "periodEnd", p.spent - d.charged AS before, p.spent AS after,
        CASE p.subject WHEN 'user' THEN p.subject_id
          ELSE (SELECT user_id FROM tokens WHERE id = p.subject_id) END AS "userId"`.pipe(
      Effect.flatMap((rows) =>
        enqueueBudgetThresholds(
          sql,
          rows.filter((row) => row.userId !== null).map((row) => ({
            periodId: BigInt(row.id),
            subject: row.subject,
            subjectId: BigInt(row.subjectId),
            userId: BigInt(row.userId),
            period: row.period,
            periodStart: new Date(row.periodStart),
            periodEnd: row.periodEnd === null ? null : new Date(row.periodEnd),
            before: BigInt(row.before),
            after: BigInt(row.after)
          }))
        )
      )
    )
  })

/**
 * Writes the deltas `taken` by one commit of instance `instance`, inside the commit's transaction: the charges
 * on users (with their charged requests) and tokens, budget spend with its threshold events, low-balance events,
 * and this instance's leases lowered by what was charged or handed back (a lease at zero is deleted).
 */
export const writeDeltas = (sql: SqlClient.SqlClient, instance: string, taken: ReadonlyArray<Taken>) =>
  Effect.gen(function* () {
    const { users, tokens, leases } = split(taken)
    if (users.length > 0) {
      // Charges come out of leases, so the balance covers them; GREATEST only guards the one case where a
      // lease expired unrenewed (a database outage longer than staleMillis): a floor, never a stuck batch.
      yield* sql`UPDATE users u SET quota = GREATEST(u.quota - d.charged, 0), used_quota = u.used_quota + d.charged,
          request_count = u.request_count + d.requests
        FROM unnest(${ids(users)}::bigint[], ${users.map((entry) => String(entry.charged))}::bigint[],
          ${users.map((entry) => entry.requests)}::bigint[]) AS d(id, charged, requests)
        WHERE u.id = d.id`
    }
    if (tokens.length > 0) {
      yield* sql`UPDATE tokens t SET remain_quota = CASE WHEN t.remain_quota IS NULL THEN NULL
            ELSE GREATEST(t.remain_quota - d.charged, 0) END,
          used_quota = t.used_quota + d.charged
        FROM unnest(${ids(tokens)}::bigint[], ${tokens.map((entry) => String(entry.charged))}::bigint[])
          AS d(id, charged)
        WHERE t.id = d.id`
    }
    yield* writeBudgetSpend(sql, taken)
    yield* enqueueLowBalances(
      sql,
      users.map((entry) => ({ userId: entry.account.id, charged: entry.charged }))
    )
    if (leases.length > 0) {
      yield* sql`UPDATE quota_leases l SET amount = GREATEST(l.amount - d.delta, 0)
        FROM unnest(${leases.map((entry) => entry.account.subject)}::text[], ${ids(leases)}::bigint[],
          ${leases.map((entry) => String(entry.charged + entry.returned))}::bigint[])
          AS d(subject, id, delta)
        WHERE l.instance_id = ${instance} AND l.subject = d.subject AND l.subject_id = d.id`
      yield* sql`DELETE FROM quota_leases WHERE instance_id = ${instance} AND amount = 0`
    }
  })

/**
 * The text and parameters of a commit as one statement (atomic on its own: one round trip, no BEGIN or COMMIT):
 * the id claimed, and only if it was claimed, the usage rows (`tuples`, JSON; `storage/UsageRowsSql.ts`)
 * inserted and the charges and lease changes of `taken` written — what the transaction does in nine. A batch
 * that charged a budget window (`chargesBudgets`) takes the statements instead. The text begins
 * `WITH claim AS (INSERT INTO ledger_commits`, which tests' commit cutter recognises.
 */
export const singleStatement = (
  id: string,
  instance: string,
  taken: ReadonlyArray<Taken>,
  tuples: string | undefined
): { readonly text: string; readonly params: ReadonlyArray<unknown> } => {
  const { users, tokens, leases } = split(taken)
  const claimed = "EXISTS (SELECT 1 FROM claim)"
  const parts = [
    `claim AS (INSERT INTO ledger_commits (id) VALUES ($1) ON CONFLICT (id) DO NOTHING RETURNING id)`
  ]
  const params: Array<unknown> = [id]
  const param = (value: unknown) => {
    params.push(value)
    return `$${params.length}`
  }
  if (tuples !== undefined) {
    parts.push(`logged AS (${insertUsageRows(`${param(tuples)}::jsonb`, claimed)} RETURNING 1)`)
  }
  if (users.length > 0) {
    parts.push(`charged_users AS (UPDATE users u SET quota = GREATEST(u.quota - d.charged, 0),
        used_quota = u.used_quota + d.charged, request_count = u.request_count + d.requests
      FROM unnest(${param(ids(users))}::bigint[], ${param(users.map((entry) => String(entry.charged)))}::bigint[], ${
      param(users.map((entry) => entry.requests))
    }::bigint[]) AS d(id, charged, requests)
      WHERE u.id = d.id AND ${claimed} RETURNING u.id, u.quota, u.used_quota, d.charged)`)
    parts.push(`low_balances AS (${lowBalanceEvents("charged_users")} RETURNING 1)`)
  }
  if (tokens.length > 0) {
    parts.push(`charged_tokens AS (UPDATE tokens t SET remain_quota = CASE WHEN t.remain_quota IS NULL THEN NULL
        ELSE GREATEST(t.remain_quota - d.charged, 0) END, used_quota = t.used_quota + d.charged
      FROM unnest(${param(ids(tokens))}::bigint[], ${
      param(tokens.map((entry) => String(entry.charged)))
    }::bigint[]) AS d(id, charged)
      WHERE t.id = d.id AND ${claimed} RETURNING 1)`)
  }
  if (leases.length > 0) {
    const deltas = `unnest(${param(leases.map((entry) => entry.account.subject))}::text[], ${
      param(ids(leases))
    }::bigint[], ${
      param(leases.map((entry) => String(entry.charged + entry.returned)))
    }::bigint[]) AS d(subject, id, delta)`
    const mine = `l.instance_id = ${param(instance)} AND l.subject = d.subject AND l.subject_id = d.id`
    // A lease that falls to zero is deleted, any other lowered (two statements on disjoint rows).
    parts.push(`leases_kept AS (UPDATE quota_leases l SET amount = l.amount - d.delta FROM ${deltas}
      WHERE ${mine} AND l.amount > d.delta AND ${claimed} RETURNING 1)`)
    parts.push(`leases_gone AS (DELETE FROM quota_leases l USING ${deltas}
      WHERE ${mine} AND l.amount <= d.delta AND ${claimed} RETURNING 1)`)
  }
  return { text: `WITH ${parts.join(",\n")} SELECT count(*) AS claimed FROM claim`, params }
}
