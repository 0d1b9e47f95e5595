/**
 * What the ledger forgets: accounts with nothing leased, held or pending
 * (after every commit), and commit ids older than a week
 * (`ledger_commits`, at most once an hour: a re-run comes within seconds).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { type Account, prunable } from "./LeaseMath.ts"

/** Forgets the accounts of `accounts` that `LeaseMath.prunable` allows (in place). */
export const pruneAccounts = (accounts: Map<string, Account>): void => {
  for (const [key, account] of accounts) if (prunable(account)) accounts.delete(key)
}

/** How often commit ids are pruned (ms): once an hour. */
const PRUNE_EVERY = 3_600_000

/**
 * An effect that deletes the commit ids older than seven days from `sql`'s
 * `ledger_commits`, at most once an hour by `now` (epoch ms) (in between it does nothing); a
 * failure is logged, not failed.
 */
export const makeCommitIdPruner = (sql: SqlClient.SqlClient, now: () => number): Effect.Effect<void> => {
  const last = { at: 0 }
  return Effect.suspend(() => {
    if (now() - last.at < PRUNE_EVERY) return Effect.void
    last.at = now()
    return sql`DELETE FROM ledger_commits WHERE committed_at < now() - interval '7 days'`.pipe(
      Effect.catch((error) => Effect.logWarning("Could not prune ledger commit ids", error.message)),
      Effect.asVoid
    )
  })
}
