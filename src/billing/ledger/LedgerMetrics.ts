/**
 * The ledger's gauges, read when metrics are scraped: how many balances this
 * instance holds a live lease on (`sluice_quota_leases`), how many quota
 * units it has leased and not held (`sluice_quota_leased_amount`), and how
 * many batches of charges it keeps not yet folded into the balances
 * (`sluice_ledger_unfolded_batches`: journaled, or waiting for a commit).
 *
 * @since 0.1.0
 */
import { Effect, type Scope } from "effect"
import { CurrentMetrics } from "../../observability/Metrics.ts"
import type { Account } from "./LeaseMath.ts"

/** How many limited accounts have something leased or held. */
export const liveLeases = (accounts: Iterable<Account>): number => {
  let count = 0
  for (const account of accounts) if (account.limited && (account.free > 0n || account.holds > 0)) count++
  return count
}

/** The quota units leased to limited accounts and not held. */
export const leasedFree = (accounts: Iterable<Account>): bigint => {
  let free = 0n
  for (const account of accounts) if (account.limited) free += account.free
  return free
}

/**
 * Registers the ledger's gauges over `accounts` and the count of unfolded batches with the gateway's metrics
 * (nothing when metrics are off); they are unregistered when the scope closes.
 */
export const registerLedgerMetrics = (
  accounts: Map<string, Account>,
  unfolded: () => number
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function* () {
    const metrics = yield* CurrentMetrics
    if (metrics === undefined) return
    const unregister = [
      metrics.pull(
        "sluice_quota_leases",
        "Balances this instance holds a quota lease on",
        () => liveLeases(accounts.values())
      ),
      metrics.pull(
        "sluice_quota_leased_amount",
        "Quota units leased to this instance and not held",
        () => Number(leasedFree(accounts.values()))
      ),
      metrics.pull(
        "sluice_ledger_unfolded_batches",
        "Batches of charges this instance keeps not yet folded into the balances and the usage log",
        unfolded
      )
    ]
    yield* Effect.addFinalizer(() => Effect.sync(() => unregister.forEach((remove) => remove())))
  })
