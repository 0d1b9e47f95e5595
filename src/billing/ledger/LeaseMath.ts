/**
 * The ledger's lease arithmetic, over plain values: what a balance's lease
 * holds in memory (`Account`), how much a top-up takes, what a hold takes,
 * what a settlement charges and gives back, what goes back to the table at a
 * commit, and what a debit may take. No effect, no database: `QuotaLedger`'s
 * parts (`Leases`, `BalanceHolds`, `BudgetHolds`, `CommitBatcher`,
 * `LeaseStore`) call these at the points the module doc of `QuotaLedger.ts`
 * describes; when an instance may serve from its leases is `Fencing`'s.
 *
 * Every amount is quota units (micro-USD) as a bigint, bounded to PostgreSQL
 * BIGINT (`MAX_AMOUNT`); every time is epoch milliseconds.
 *
 * @since 0.1.0
 */
import type { BudgetPeriod } from "../../domain/BudgetPeriod.ts"

/** The largest amount a ledger operation accepts (PostgreSQL BIGINT). @category models */
export const MAX_AMOUNT = 9_223_372_036_854_775_807n

/**
 * Whose balance an account leases from: a user's (`users.quota`), a token's
 * (`tokens.remain_quota`), or one window of a budget (a `budget_periods` row).
 *
 * @category models
 */
export type Subject = "user" | "token" | "budget"

/**
 * What a budget account stands for: whose budget (`owner`), which `period`,
 * its `amount` (quota units) and the end of the window it leases from (epoch
 * ms; `undefined` for a total budget, which does not reset).
 *
 * @category models
 */
export interface BudgetSlot {
  readonly owner: "token" | "user"
  readonly period: BudgetPeriod
  readonly amount: bigint
  readonly end: number | undefined
}

/**
 * One balance as this instance sees it. `free` is leased and not held;
 * `charged`, `returned` and `requests` are what the next commit writes.
 * Mutable: the ledger moves amounts inside it synchronously.
 *
 * @category models
 */
export interface Account {
  readonly subject: Subject
  readonly id: bigint
  /** False for an unlimited token: nothing to lease, only charges to record. */
  readonly limited: boolean
  free: bigint
  charged: bigint
  returned: bigint
  requests: number
  holds: number
  /** When a hold was last taken or settled (epoch ms). */
  lastUsed: number
  /** The lease size this account tops up to (grows with the holds it serves); a refill starts below half of it. */
  target: bigint
  /** A background refill is running. */
  refilling: boolean
  /** Set on a budget account (subject `budget`). */
  budget?: BudgetSlot
}

/**
 * Quota held for one request. `settled` flips once, so a hold is never
 * settled twice.
 *
 * @category models
 */
export interface Hold {
  readonly tokenId: bigint
  readonly userId: bigint
  readonly amount: bigint
  settled: boolean
}

/** A caller's balances in quota units, unflushed charges included. `tokenRemain` is null for an unlimited token. */
export interface Balances {
  readonly tokenRemain: bigint | null
  readonly tokenUsed: bigint
  readonly userQuota: bigint
  readonly userUsed: bigint
}

/** Whose balances an adjustment moves: a user and one of their tokens (ids). @category models */
export interface BalanceOwner {
  readonly userId: bigint
  readonly tokenId: bigint
}

/**
 * What a commit takes out of one account: its charges, its lease handed back
 * and its charged requests since the last commit.
 *
 * @category models
 */
export interface Taken {
  readonly account: Account
  readonly charged: bigint
  readonly returned: bigint
  readonly requests: number
}

/** The smaller of two amounts. */
export const min = (left: bigint, right: bigint): bigint => left < right ? left : right

/** The key of an account in the ledger's map: `subject:id`. */
export const accountKey = (subject: Subject, id: bigint): string => `${subject}:${id}`

/** A fresh account: nothing leased, held or pending; it tops up to `target`. */
export const newAccount = (subject: Subject, id: bigint, limited: boolean, target: bigint): Account => ({
  subject,
  id,
  limited,
  free: 0n,
  charged: 0n,
  returned: 0n,
  requests: 0,
  holds: 0,
  lastUsed: 0,
  target,
  refilling: false
})

/** Whether `amount` is outside what a hold accepts (negative, or beyond `MAX_AMOUNT`). */
export const outOfRange = (amount: bigint): boolean => amount < 0n || amount > MAX_AMOUNT

/** A settlement's cost bounded to `[0, MAX_AMOUNT]`. */
export const boundCost = (requested: bigint): bigint =>
  requested < 0n ? 0n : requested > MAX_AMOUNT ? MAX_AMOUNT : requested

/** A signed adjustment bounded to `[-MAX_AMOUNT, MAX_AMOUNT]`. */
export const boundAdjustment = (amount: bigint): bigint =>
  amount > MAX_AMOUNT ? MAX_AMOUNT : amount < -MAX_AMOUNT ? -MAX_AMOUNT : amount

/** Whether the account's lease covers a hold of `amount` (an unlimited account covers anything). */
export const covers = (account: Account, amount: bigint): boolean => !account.limited || account.free >= amount

/** Takes a covered hold of `amount` out of the account's lease at `now`. */
export const take = (account: Account, amount: bigint, now: number): void => {
  if (account.limited) account.free -= amount
  account.lastUsed = now
}

/** Whether the account's lease should be topped up in the background: limited, not refilling, below half its target. */
export const wantsRefill = (account: Account): boolean =>
  account.limited && !account.refilling && account.free * 2n < account.target

/** What a background refill asks for: up to the account's target (0 when the lease already reaches it). */
export const refillWant = (account: Account): bigint =>
  account.free >= account.target ? 0n : account.target - account.free

/**
 * The lease size an account tops up to after a hold of `amount` had to reach
 * the database: enough for 64 such holds (bounded to `MAX_AMOUNT`), so a
 * burst of them takes few trips; never smaller than it was.
 */
export const grownTarget = (target: bigint, amount: bigint): bigint =>
  amount * 64n > target ? min(amount * 64n, MAX_AMOUNT) : target

/** What a top-up asks for: the shortfall and a lease `beyond` it (the target, or the chunk), bounded to `MAX_AMOUNT`. */
export const topUpWant = (shortfall: bigint, beyond: bigint): bigint => min(shortfall + beyond, MAX_AMOUNT)

/**
 * What a top-up takes into a lease, given the stored `balance`, the sum of
 * every live lease on it (`leased`, this instance's included) and this
 * instance's uncommitted hand-backs (`returned`, counted back): nothing when
 * less than `need` (or nothing at all) is available, else up to `want` of it.
 */
export const leaseGrant = (
  balance: bigint,
  leased: bigint,
  returned: bigint,
  need: bigint,
  want: bigint
): { readonly taken: bigint; readonly available: bigint } => {
  const available = balance - leased + returned
  if (available < need || available <= 0n) return { taken: 0n, available }
  return { taken: min(available, want), available }
}

/** What a refused hold reports as remaining: what the table had available (not below 0) plus the lease's free part. */
export const remainingAfter = (available: bigint, free: bigint): bigint => (available > 0n ? available : 0n) + free

/** What both balance leases can give beyond a hold: the least free part (an unlimited token gives anything). */
export const balanceRoom = (token: Account, user: Account): bigint =>
  min(token.limited ? token.free : MAX_AMOUNT, user.free)

/** Takes `extra` (within `balanceRoom`) out of both balance leases. */
export const takeBalanceExtra = (token: Account, user: Account, extra: bigint): void => {
  if (token.limited) token.free -= extra
  user.free -= extra
}

/**
 * Books a settled charge on the hold's balance accounts at `now`: both get
 * back what the hold and the `extra` taken beyond it held over `charged`, and
 * record the charge; a charged request (above 0) counts on the user.
 * Returns `charged`.
 */
export const bookBalances = (
  held: bigint,
  token: Account,
  user: Account,
  charged: bigint,
  extra: bigint,
  now: number
): bigint => {
  const refund = held + extra - charged
  for (const account of [token, user]) {
    if (account.limited) account.free += refund
    account.charged += charged
    account.holds -= 1
    account.lastUsed = now
  }
  if (charged > 0n) user.requests += 1
  return charged
}

/** What every budget lease of a hold can give beyond it: the least free part (`MAX_AMOUNT` with none). */
export const budgetRoom = (accounts: ReadonlyArray<Account>): bigint =>
  accounts.reduce((least, account) => min(least, account.free), MAX_AMOUNT)

/** Takes what the budget leases can give of `excess` out of each; returns it (never below 0). */
export const takeBudgetExtra = (accounts: ReadonlyArray<Account>, excess: bigint): bigint => {
  const room = budgetRoom(accounts)
  const extra = min(excess, room > 0n ? room : 0n)
  for (const account of accounts) account.free -= extra
  return extra
}

/**
 * Books a settled charge on the budget windows of its hold at `now`: each
 * gets back `held − charged` and records the charge.
 */
export const bookBudgets = (accounts: ReadonlyArray<Account>, held: bigint, charged: bigint, now: number): void => {
  for (const account of accounts) {
    account.free += held - charged
    account.charged += charged
    account.holds -= 1
    account.lastUsed = now
  }
}

/** Gives a budget hold of `amount` back whole (the balance's hold failed after it was taken). */
export const releaseBudgets = (accounts: ReadonlyArray<Account>, amount: bigint): void => {
  for (const account of accounts) {
    account.free += amount
    account.holds -= 1
  }
}

/**
 * The lease a budget window tops up to: an eighth of the budget (at least 1),
 * so that with several instances most of a small budget stays in the table
 * for whichever instance needs it, rather than idle in one instance's lease.
 */
export const budgetTarget = (amount: bigint): bigint => amount / 8n > 0n ? amount / 8n : 1n

/**
 * Moves the free lease of every account without a hold that went unused for
 * `idleMillis` (with `all`, of every account without a hold) to `returned`,
 * and takes out every account's pending charges, hand-backs and requests:
 * what one commit writes. The accounts are left with nothing pending.
 */
export const snapshot = (
  accounts: Iterable<Account>,
  all: boolean,
  now: number,
  idleMillis: number
): Array<Taken> => {
  const taken: Array<Taken> = []
  for (const account of accounts) {
    if (account.free > 0n && account.holds === 0 && (all || now - account.lastUsed >= idleMillis)) {
      account.returned += account.free
      account.free = 0n
    }
    if (account.charged === 0n && account.returned === 0n && account.requests === 0) continue
    taken.push({ account, charged: account.charged, returned: account.returned, requests: account.requests })
    account.charged = 0n
    account.returned = 0n
    account.requests = 0
  }
  return taken
}

/**
 * Takes out every account's pending charges and charged requests, leaving its
 * lease and hand-backs alone: what one journal record holds (the charges
 * booked since the last one). Safe outside the ledger's gate: it reads and
 * clears only what settlements write in their own synchronous step.
 */
export const snapshotCharges = (accounts: Iterable<Account>): Array<Taken> => {
  const taken: Array<Taken> = []
  for (const account of accounts) {
    if (account.charged === 0n && account.requests === 0) continue
    taken.push({ account, charged: account.charged, returned: 0n, requests: account.requests })
    account.charged = 0n
    account.requests = 0
  }
  return taken
}

/**
 * The entries of several commits' batches as one: charges, hand-backs and
 * requests summed per account (`subject:id`), in the order accounts first
 * appear. What a fold of many journal records writes in one transaction.
 */
export const mergeTaken = (lists: ReadonlyArray<ReadonlyArray<Taken>>): Array<Taken> => {
  const merged = new Map<string, Taken>()
  for (const list of lists) {
    for (const entry of list) {
      const key = accountKey(entry.account.subject, entry.account.id)
      const seen = merged.get(key)
      merged.set(
        key,
        seen === undefined ? entry : {
          account: seen.account,
          charged: seen.charged + entry.charged,
          returned: seen.returned + entry.returned,
          requests: seen.requests + entry.requests
        }
      )
    }
  }
  return [...merged.values()]
}

/**
 * A batch's entries less a withdrawn charge of `amount` on each account of
 * `keys` (`accountKey`), and one charged request less on its user.
 */
export const withdrawn = (taken: ReadonlyArray<Taken>, keys: ReadonlyArray<string>, amount: bigint): Array<Taken> =>
  taken.map((entry) => {
    if (!keys.includes(accountKey(entry.account.subject, entry.account.id))) return entry
    const requests = entry.account.subject === "user" && amount > 0n ? entry.requests - 1 : entry.requests
    return { ...entry, charged: entry.charged - amount, requests }
  })

/**
 * Whether an account may be forgotten: nothing leased, held or pending, and
 * no background refill running (it would lease into an account no longer in
 * the map: a lease no hold could use and no commit would hand back).
 */
export const prunable = (account: Account): boolean =>
  account.holds === 0 && account.free === 0n && account.charged === 0n && account.returned === 0n &&
  account.requests === 0 && !account.refilling

/**
 * The charges of the account `key` not yet in the table: its own and those of
 * a failed commit kept for its re-run (`retried`).
 */
export const pendingCharge = (
  account: Account | undefined,
  retried: ReadonlyArray<Taken>,
  key: string
): bigint =>
  (account?.charged ?? 0n) +
  retried.reduce(
    (sum, entry) => accountKey(entry.account.subject, entry.account.id) === key ? sum + entry.charged : sum,
    0n
  )

/**
 * A caller's balances: the stored row (absent: zeros) less the charges
 * pending on the token and on the user.
 */
export const withPending = (
  row: Balances | undefined,
  token: bigint,
  user: bigint
): Balances => ({
  tokenRemain: row?.tokenRemain === null || row?.tokenRemain === undefined ? null : row.tokenRemain - token,
  tokenUsed: (row?.tokenUsed ?? 0n) + token,
  userQuota: (row?.userQuota ?? 0n) - user,
  userUsed: (row?.userUsed ?? 0n) + user
})

/**
 * What a debit of `wanted` (positive) may take: at most what no instance
 * holds of the user's balance (`userUnleased`) and, for a limited token, of
 * the token's (`tokenUnleased`; `undefined` for an unlimited one). Can be 0
 * or below when nothing is unleased.
 */
export const debitCap = (wanted: bigint, userUnleased: bigint, tokenUnleased: bigint | undefined): bigint => {
  const extra = min(wanted, userUnleased)
  return tokenUnleased === undefined ? extra : min(extra, tokenUnleased)
}
