/**
 * One instance's leases in memory: the accounts (one per balance it has
 * leased from or charged), the gate that serializes everything that must see
 * the lease rows and the accounts in agreement (top-ups, commits, balance
 * reads), the renewal of its lease rows and the fencing that follows from
 * it, and the top-ups (on demand and in the background). The arithmetic is
 * `LeaseMath`'s, the SQL the `LeaseStore`'s.
 *
 * @since 0.1.0
 */
import { Effect, type Scope, type Semaphore } from "effect"
import type { SqlError } from "effect/sql"
import { dropLost, type Fence, isFenced, renewalDue } from "./Fencing.ts"
import { type Account, accountKey, newAccount, refillWant, type Subject, wantsRefill } from "./LeaseMath.ts"
import type { LeaseStore } from "./LeaseStore.ts"
import { pruneAccounts } from "./Pruning.ts"

/**
 * The in-memory side of one instance's leases.
 *
 * @category models
 */
export interface Leases {
  /** The time, epoch milliseconds, from the `Clock` the ledger's layer was built with. */
  readonly now: () => number
  /** Every account of this instance, by `LeaseMath.accountKey`. */
  readonly accounts: Map<string, Account>
  /** Serializes lease top-ups, commits and balance reads (one permit). */
  readonly gate: Semaphore.Semaphore
  /** The account of a balance, made (empty, topping up to the chunk) on first use. */
  readonly accountOf: (subject: Subject, id: bigint, limited: boolean) => Account
  /** Whether this instance serves no hold from its leases (`LeaseMath.isFenced`). */
  readonly fenced: () => boolean
  /**
   * Renews every lease row of this instance now (held parts too: a stream
   * may hold for many minutes); a lease found gone (it went unrenewed past
   * `staleMillis`) no longer backs this instance's free amount. With no
   * account there is no lease to renew.
   */
  readonly renewNow: Effect.Effect<void, SqlError.SqlError>
  /** `renewNow` when due (`LeaseMath.renewalDue`); a failed renewal is logged, not failed. */
  readonly renew: Effect.Effect<void>
  /** Takes up to `want` into the account's lease if `need` is available (`LeaseStore.lease`), and adds it. */
  readonly topUp: (
    account: Account,
    need: bigint,
    want: bigint
  ) => Effect.Effect<{ readonly taken: bigint; readonly available: bigint }, SqlError.SqlError>
  /**
   * Tops the lease up in the background (under the gate, forked into the
   * layer's scope) once it falls below half its target, so requests under
   * steady load find it covered and never wait for the database (nor for a
   * commit holding the gate).
   */
  readonly refillLater: (account: Account) => Effect.Effect<void>
  /** Forgets the accounts with nothing leased, held or pending (`Pruning.pruneAccounts`). */
  readonly prune: () => void
}

/**
 * The leases of one instance: `store` its SQL, `gate` its one-permit
 * semaphore, `scope` where background refills run, `chunk` the first lease
 * target of an account, `staleMillis` the fencing time.
 */
export const makeLeases = (options: {
  readonly store: LeaseStore
  readonly gate: Semaphore.Semaphore
  readonly scope: Scope.Scope
  readonly chunk: bigint
  readonly staleMillis: number
  /** The time, epoch milliseconds (the layer's `Clock`). */
  readonly now: () => number
}): Leases => {
  const { store, gate, scope, chunk, staleMillis, now } = options
  const accounts = new Map<string, Account>()
  // From the start, since a lease row is fresh when made: every row is renewed within a quarter of `staleMillis`
  // (and a commit tick) of its making or last renewal.
  const fence: Fence = { renewedAt: now(), reachedAt: now() }

  const accountOf = (subject: Subject, id: bigint, limited: boolean): Account => {
    const key = accountKey(subject, id)
    let account = accounts.get(key)
    if (account === undefined) {
      account = newAccount(subject, id, limited, chunk)
      accounts.set(key, account)
    }
    return account
  }

  const fenced = () => isFenced(fence, now(), staleMillis)

  const renewNow: Effect.Effect<void, SqlError.SqlError> = Effect.suspend(() => {
    const started = now()
    fence.renewedAt = started
    if (accounts.size === 0) {
      fence.reachedAt = started
      return Effect.void
    }
    return store.renew.pipe(Effect.map((alive) => {
      dropLost(accounts.values(), alive)
      fence.reachedAt = started
    }))
  })

  const renew = Effect.suspend(() =>
    !renewalDue(fence, now(), staleMillis) ? Effect.void : renewNow.pipe(
      Effect.catch((error) => Effect.logWarning("Could not renew the quota leases", error.message))
    )
  )

  const topUp = (account: Account, need: bigint, want: bigint) =>
    store.lease(account, need, want).pipe(Effect.tap(({ taken }) =>
      Effect.sync(() => {
        account.free += taken
      })
    ))

  const refillLater = (account: Account): Effect.Effect<void> =>
    !wantsRefill(account) ? Effect.void : Effect.suspend(() => {
      account.refilling = true
      return gate.withPermits(1)(
        Effect.suspend((): Effect.Effect<unknown, SqlError.SqlError> => {
          const want = refillWant(account)
          return want === 0n ? Effect.void : topUp(account, 0n, want)
        })
      ).pipe(
        Effect.catch((error) => Effect.logWarning("Could not top a quota lease up", error.message)),
        Effect.ensuring(Effect.sync(() => {
          account.refilling = false
        })),
        Effect.forkIn(scope),
        Effect.asVoid
      )
    })

  const prune = () => pruneAccounts(accounts)

  return { now, accounts, gate, accountOf, fenced, renewNow, renew, topUp, refillLater, prune }
}
