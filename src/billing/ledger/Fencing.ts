/**
 * Fencing, over plain values: an instance that has not renewed its lease
 * rows for `staleMillis` (the time after which another instance may drop
 * them) serves no hold from its leases; it renews them every quarter of that
 * time, and a renewal that does not find a lease row zeroes what that lease
 * held free. `Leases` keeps the times and runs the renewals.
 *
 * @since 0.1.0
 */
import { type Account, accountKey } from "./LeaseMath.ts"

/**
 * When this instance last tried to renew its lease rows (`renewedAt`) and
 * when the last renewal that succeeded started (`reachedAt`), epoch ms.
 *
 * @category models
 */
export interface Fence {
  renewedAt: number
  reachedAt: number
}

/**
 * Whether this instance serves no hold from its leases: its lease rows went
 * unrenewed for more than `staleMillis` (another instance may have dropped them).
 */
export const isFenced = (fence: Fence, now: number, staleMillis: number): boolean => now - fence.reachedAt > staleMillis

/**
 * Whether a commit renews the lease rows: a quarter of `staleMillis` passed
 * since the last try (three renewals can fail before a lease may go), or the
 * instance is fenced.
 */
export const renewalDue = (fence: Fence, now: number, staleMillis: number): boolean =>
  now - fence.renewedAt >= staleMillis / 4 || isFenced(fence, now, staleMillis)

/**
 * Zeroes the free part of every limited account whose lease row a renewal
 * did not find (`alive`: the keys of the rows it renewed): a lease gone
 * unrenewed past the stale time no longer backs what this instance holds free.
 */
export const dropLost = (accounts: Iterable<Account>, alive: ReadonlySet<string>): void => {
  for (const account of accounts) {
    if (account.limited && account.free > 0n && !alive.has(accountKey(account.subject, account.id))) {
      account.free = 0n
    }
  }
}
