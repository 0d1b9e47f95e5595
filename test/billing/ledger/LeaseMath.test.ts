/**
 * The ledger's lease arithmetic as properties over arbitrary amounts and
 * sequences of operations: a top-up never leases beyond the balance, a hold
 * never takes more than is free, every unit leased is at every step free,
 * held, charged or handed back (never lost, never doubled), a commit takes
 * exactly what is pending, a debit never uncovers a lease, and fencing
 * starts exactly past the stale time.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { budgetRefusal } from "../../../src/billing/ledger/BudgetWindows.ts"
import { dropLost, isFenced, renewalDue } from "../../../src/billing/ledger/Fencing.ts"
import {
  type Account,
  balanceRoom,
  bookBalances,
  bookBudgets,
  boundAdjustment,
  boundCost,
  budgetRoom,
  budgetTarget,
  covers,
  debitCap,
  grownTarget,
  leaseGrant,
  MAX_AMOUNT,
  mergeTaken,
  min,
  newAccount,
  outOfRange,
  pendingCharge,
  prunable,
  refillWant,
  releaseBudgets,
  remainingAfter,
  snapshot,
  snapshotCharges,
  take,
  takeBalanceExtra,
  takeBudgetExtra,
  type Taken,
  topUpWant,
  wantsRefill,
  withdrawn,
  withPending
} from "../../../src/billing/ledger/LeaseMath.ts"

const amount = fc.bigInt({ min: 0n, max: MAX_AMOUNT })
/** Amounts small enough that sums of a few stay within BIGINT, as leases and holds are in practice. */
const small = fc.bigInt({ min: 0n, max: 10_000_000n })
const signed = fc.bigInt({ min: -2n * MAX_AMOUNT, max: 2n * MAX_AMOUNT })

Deno.test("LeaseMath: a cost and an adjustment are bounded to BIGINT, unchanged within it", () => {
  fc.assert(fc.property(signed, (value) => {
    const cost = boundCost(value)
    ok(cost >= 0n && cost <= MAX_AMOUNT)
    if (value >= 0n && value <= MAX_AMOUNT) strictEqual(cost, value)
    const adjustment = boundAdjustment(value)
    ok(adjustment >= -MAX_AMOUNT && adjustment <= MAX_AMOUNT)
    if (value >= -MAX_AMOUNT && value <= MAX_AMOUNT) strictEqual(adjustment, value)
    strictEqual(outOfRange(value), value < 0n || value > MAX_AMOUNT)
  }))
})

Deno.test("LeaseMath: a top-up takes nothing below the need, else up to the want, never beyond what is available", () => {
  fc.assert(fc.property(amount, amount, small, small, small, (balance, leasedRaw, returned, need, extra) => {
    const leased = leasedRaw > balance ? balance : leasedRaw
    const want = need + extra
    const { taken, available } = leaseGrant(balance, leased, returned, need, want)
    strictEqual(available, balance - leased + returned)
    if (available < need || available <= 0n) strictEqual(taken, 0n)
    else {
      strictEqual(taken, min(available, want))
      ok(taken >= need)
    }
    ok(taken >= 0n && taken <= want)
    // Every live lease, this one's new part included, stays within the balance (returned units are this
    // instance's own, leased already and about to go back).
    ok(leased + taken <= balance + returned)
  }))
})

Deno.test("LeaseMath: a lease target grows to 64 holds, bounded, never shrinks; a top-up's want is bounded", () => {
  fc.assert(fc.property(amount, amount, (target, hold) => {
    const grown = grownTarget(target, hold)
    ok(grown >= target)
    ok(grown <= MAX_AMOUNT)
    ok(grown >= min(hold * 64n, MAX_AMOUNT))
    const want = topUpWant(hold, target)
    ok(want <= MAX_AMOUNT)
    strictEqual(want, min(hold + target, MAX_AMOUNT))
  }))
})

Deno.test("LeaseMath: a budget window's lease target is an eighth of it, at least 1", () => {
  fc.assert(fc.property(amount, (budget) => {
    const target = budgetTarget(budget)
    ok(target >= 1n)
    ok(target <= (budget > 0n ? budget : 1n))
    if (budget >= 8n) strictEqual(target, budget / 8n)
  }))
})

/** One step of the model run over a user's and a token's account. */
type Step =
  | { readonly kind: "lease"; readonly user: bigint; readonly token: bigint }
  | { readonly kind: "hold"; readonly amount: bigint }
  | { readonly kind: "settle"; readonly pick: number; readonly cost: bigint }
  | { readonly kind: "commit"; readonly all: boolean; readonly elapsed: number }

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant("lease" as const), user: small, token: small }),
  fc.record({ kind: fc.constant("hold" as const), amount: fc.bigInt({ min: 0n, max: 3_000_000n }) }),
  fc.record({
    kind: fc.constant("settle" as const),
    pick: fc.nat(),
    cost: fc.oneof(fc.bigInt({ min: -10n, max: 6_000_000n }), signed)
  }),
  fc.record({ kind: fc.constant("commit" as const), all: fc.boolean(), elapsed: fc.nat({ max: 3_000 }) })
)

Deno.test("LeaseMath: every unit leased is free, held, charged or handed back, through any holds, settlements and commits", () => {
  fc.assert(fc.property(fc.boolean(), fc.array(step, { maxLength: 60 }), (unlimited, steps) => {
    const idleMillis = 1_000
    let now = 1_000_000
    const user = newAccount("user", 1n, true, 1_000_000n)
    const token = newAccount("token", 2n, !unlimited, 1_000_000n)
    const leased = new Map<Account, bigint>([[user, 0n], [token, 0n]])
    const written = new Map<Account, { charged: bigint; returned: bigint; requests: number }>([
      [user, { charged: 0n, returned: 0n, requests: 0 }],
      [token, { charged: 0n, returned: 0n, requests: 0 }]
    ])
    const open: Array<bigint> = []
    let chargedRequests = 0
    for (const next of steps) {
      switch (next.kind) {
        case "lease":
          for (const [account, more] of [[user, next.user], [token, next.token]] as const) {
            if (!account.limited) continue
            account.free += more
            leased.set(account, leased.get(account)! + more)
          }
          break
        case "hold": {
          if (!covers(token, next.amount) || !covers(user, next.amount)) break
          const freeBefore = user.free
          token.holds += 1
          user.holds += 1
          take(token, next.amount, now)
          take(user, next.amount, now)
          strictEqual(user.free, freeBefore - next.amount)
          open.push(next.amount)
          break
        }
        case "settle": {
          if (open.length === 0) break
          const [held] = open.splice(next.pick % open.length, 1)
          const cost = boundCost(next.cost)
          let charged: bigint
          if (cost <= held) charged = bookBalances(held, token, user, cost, 0n, now)
          else {
            const extra = min(cost - held, balanceRoom(token, user))
            takeBalanceExtra(token, user, extra)
            charged = bookBalances(held, token, user, held + extra, extra, now)
          }
          ok(charged <= cost && charged >= 0n)
          // Charged in full when the hold and the leases' free parts cover the cost.
          if (cost <= held) strictEqual(charged, cost)
          if (charged > 0n) chargedRequests++
          break
        }
        case "commit": {
          now += next.elapsed
          const idleBefore = [user, token].map((account) => account.holds === 0 && now - account.lastUsed >= idleMillis)
          const taken = snapshot([user, token], next.all, now, idleMillis)
          for (const entry of taken) {
            const total = written.get(entry.account)!
            total.charged += entry.charged
            total.returned += entry.returned
            total.requests += entry.requests
          }
          for (const [index, account] of [user, token].entries()) {
            // Nothing left pending; a lease goes back only without a hold, idle (or every one, with `all`).
            strictEqual(account.charged, 0n)
            strictEqual(account.returned, 0n)
            strictEqual(account.requests, 0)
            if (account.holds === 0 && (next.all || idleBefore[index])) strictEqual(account.free, 0n)
          }
          break
        }
      }
      const held = open.reduce((sum, hold) => sum + hold, 0n)
      for (const account of [user, token]) {
        strictEqual(account.holds, open.length)
        const total = written.get(account)!
        const charged = account.charged + total.charged
        if (!account.limited) {
          strictEqual(account.free, 0n)
          continue
        }
        ok(account.free >= 0n, "a lease's free part never goes below zero")
        strictEqual(account.free + held + charged + account.returned + total.returned, leased.get(account))
      }
      strictEqual(user.requests + written.get(user)!.requests, chargedRequests)
      strictEqual(token.requests + written.get(token)!.requests, 0)
    }
  }))
})

Deno.test("LeaseMath: a budget excess takes at most what every window has free; books and releases give back the rest", () => {
  fc.assert(fc.property(fc.array(small, { minLength: 1, maxLength: 4 }), small, small, (frees, held, excess) => {
    const accounts = frees.map((free, index) => {
      const account = newAccount("budget", BigInt(index), true, 1n)
      account.free = free + held
      account.holds = 1
      return account
    })
    // The hold taken from every window.
    for (const account of accounts) take(account, held, 0)
    const room = budgetRoom(accounts)
    const extra = takeBudgetExtra(accounts, excess)
    ok(extra >= 0n && extra <= excess && extra <= room)
    for (const [index, account] of accounts.entries()) {
      ok(account.free >= 0n)
      strictEqual(account.free, frees[index] - extra)
    }
    bookBudgets(accounts, held + extra, held + extra, 5)
    for (const [index, account] of accounts.entries()) {
      strictEqual(account.free, frees[index] - extra)
      strictEqual(account.charged, held + extra)
      strictEqual(account.holds, 0)
      strictEqual(account.lastUsed, 5)
    }
    for (const account of accounts) account.holds = 1
    releaseBudgets(accounts, held)
    for (const [index, account] of accounts.entries()) {
      strictEqual(account.free, frees[index] - extra + held)
      strictEqual(account.holds, 0)
    }
  }))
})

Deno.test("LeaseMath: a debit never takes more than asked nor more than any balance has unleased", () => {
  fc.assert(
    fc.property(amount, signed, fc.option(signed, { nil: undefined }), (wanted, userUnleased, tokenUnleased) => {
      const cap = debitCap(wanted, userUnleased, tokenUnleased)
      ok(cap <= wanted)
      ok(cap <= userUnleased)
      if (tokenUnleased !== undefined) ok(cap <= tokenUnleased)
      strictEqual(
        cap,
        tokenUnleased === undefined ? min(wanted, userUnleased) : min(min(wanted, userUnleased), tokenUnleased)
      )
    })
  )
})

Deno.test("LeaseMath: fenced exactly past the stale time since the last renewal that reached the table; renewal due then too", () => {
  fc.assert(
    fc.property(
      fc.nat({ max: 10_000_000 }),
      fc.nat({ max: 10_000_000 }),
      fc.nat({ max: 1_000_000 }),
      fc.integer({ min: 1, max: 1_000_000 }),
      (reachedAt, since, renewedAgo, staleMillis) => {
        const now = reachedAt + since
        const fence = { renewedAt: now - renewedAgo, reachedAt }
        strictEqual(isFenced(fence, now, staleMillis), since > staleMillis)
        strictEqual(renewalDue(fence, now, staleMillis), renewedAgo >= staleMillis / 4 || since > staleMillis)
      }
    )
  )
})

Deno.test("LeaseMath: a renewal zeroes exactly the free parts of limited accounts whose lease row is gone", () => {
  fc.assert(fc.property(
    fc.array(fc.record({ limited: fc.boolean(), free: small, alive: fc.boolean() }), { maxLength: 8 }),
    (specs) => {
      const accounts = specs.map((spec, index) => {
        const account = newAccount(index % 2 === 0 ? "user" : "token", BigInt(index), spec.limited, 1n)
        account.free = spec.free
        return account
      })
      const alive = new Set(specs.flatMap((spec, index) => spec.alive ? [`${accounts[index].subject}:${index}`] : []))
      dropLost(accounts, alive)
      for (const [index, account] of accounts.entries()) {
        const spec = specs[index]
        strictEqual(account.free, spec.limited && !spec.alive ? 0n : spec.free)
      }
    }
  ))
})

Deno.test("LeaseMath: a refill starts below half the target and asks for the rest of it", () => {
  fc.assert(fc.property(small, small, fc.boolean(), fc.boolean(), (free, target, limited, refilling) => {
    const account = newAccount("user", 1n, limited, target)
    account.free = free
    account.refilling = refilling
    strictEqual(wantsRefill(account), limited && !refilling && free * 2n < target)
    strictEqual(refillWant(account), free >= target ? 0n : target - free)
    strictEqual(free + refillWant(account) >= target, true)
  }))
})

Deno.test("LeaseMath: balances show the pending charges, a failed commit's included; an unlimited token stays null", () => {
  fc.assert(fc.property(
    fc.option(small, { nil: null }),
    small,
    small,
    small,
    fc.array(fc.record({ token: fc.boolean(), charged: small }), { maxLength: 4 }),
    small,
    small,
    (tokenRemain, tokenUsed, userQuota, userUsed, retried, ownToken, ownUser) => {
      const token = newAccount("token", 7n, tokenRemain !== null, 1n)
      const user = newAccount("user", 3n, true, 1n)
      token.charged = ownToken
      user.charged = ownUser
      const kept: Array<Taken> = retried.map((entry) => ({
        account: entry.token ? token : user,
        charged: entry.charged,
        returned: 0n,
        requests: 0
      }))
      const tokenPending = pendingCharge(token, kept, "token:7")
      const userPending = pendingCharge(user, kept, "user:3")
      strictEqual(
        tokenPending,
        ownToken + retried.reduce((sum, entry) => entry.token ? sum + entry.charged : sum, 0n)
      )
      strictEqual(pendingCharge(undefined, [], "user:3"), 0n)
      const shown = withPending({ tokenRemain, tokenUsed, userQuota, userUsed }, tokenPending, userPending)
      strictEqual(shown.tokenRemain, tokenRemain === null ? null : tokenRemain - tokenPending)
      strictEqual(shown.tokenUsed, tokenUsed + tokenPending)
      strictEqual(shown.userQuota + shown.userUsed, userQuota + userUsed)
      deepStrictEqual(withPending(undefined, 0n, 0n), { tokenRemain: null, tokenUsed: 0n, userQuota: 0n, userUsed: 0n })
    }
  ))
})

Deno.test("LeaseMath: an account is forgotten only with nothing leased, held, pending or refilling", () => {
  fc.assert(
    fc.property(
      small,
      small,
      small,
      fc.nat({ max: 2 }),
      fc.nat({ max: 2 }),
      fc.boolean(),
      (free, charged, returned, holds, requests, refilling) => {
        const account = newAccount("user", 1n, true, 1n)
        Object.assign(account, { free, charged, returned, holds, requests, refilling })
        strictEqual(
          prunable(account),
          free === 0n && charged === 0n && returned === 0n && holds === 0 && requests === 0 && !refilling
        )
      }
    )
  )
})

Deno.test("LeaseMath: a refused hold reports what the table had (not below 0) plus the lease's free part", () => {
  fc.assert(fc.property(signed, small, (available, free) => {
    const remaining = remainingAfter(available, free)
    ok(remaining >= free)
    strictEqual(remaining, (available > 0n ? available : 0n) + free)
  }))
})

Deno.test("BudgetWindows: a refusal names the budget in dollars, floors what is left at 0 and retries no sooner than 1 s", () => {
  fc.assert(fc.property(
    fc.constantFrom("day" as const, "week" as const, "month" as const, "total" as const),
    fc.constantFrom("token" as const, "user" as const),
    fc.bigInt({ min: 1n, max: 1_000_000_000n }),
    fc.bigInt({ min: -1_000_000n, max: 1_000_000_000n }),
    fc.integer({ min: -10_000, max: 100_000_000 }),
    (period, owner, budget, remaining, untilEnd) => {
      const now = 1_700_000_000_000
      const end = period === "total" ? undefined : now + untilEnd
      const refusal = budgetRefusal({ owner, period, amount: budget, end }, 5n, remaining, now)
      ok(refusal.message.startsWith(owner === "token" ? "The key's " : "The user's "))
      ok(remaining > 0n || refusal.message.includes(" $0 of it is left"))
      if (end === undefined) {
        strictEqual(refusal.retryAfterSeconds, undefined)
        ok(refusal.message.endsWith("it does not reset."))
      } else {
        ok(refusal.retryAfterSeconds! >= 1)
        strictEqual(refusal.retryAfterSeconds, Math.max(1, Math.ceil(untilEnd / 1000)))
      }
    }
  ))
})

Deno.test("snapshotCharges: takes the charges and charged requests, leaves the lease and the hand-backs", () => {
  const user = { ...newAccount("user", 1n, true, 100n), free: 40n, charged: 30n, returned: 5n, requests: 2 }
  const idle = { ...newAccount("token", 2n, true, 100n), free: 10n }
  const taken = snapshotCharges([user, idle])
  deepStrictEqual(taken.map(({ charged, returned, requests }) => ({ charged, returned, requests })), [
    { charged: 30n, returned: 0n, requests: 2 }
  ])
  deepStrictEqual({ free: user.free, charged: user.charged, returned: user.returned, requests: user.requests }, {
    free: 40n,
    charged: 0n,
    returned: 5n,
    requests: 0
  })
  strictEqual(idle.free, 10n)
})

Deno.test("mergeTaken: any split of the same entries into batches merges to the same sums per account", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          key: fc.constantFrom<["user" | "token" | "budget", bigint]>(["user", 1n], ["token", 1n], ["budget", 7n]),
          charged: fc.bigInt({ min: 0n, max: 1_000_000n }),
          returned: fc.bigInt({ min: 0n, max: 1_000n }),
          requests: fc.nat(5)
        }),
        { maxLength: 20 }
      ),
      fc.array(fc.nat(4), { minLength: 20, maxLength: 20 }),
      (entries, cuts) => {
        const accounts = new Map<string, Account>()
        const entryOf = (entry: (typeof entries)[number]): Taken => {
          const key = entry.key.join(":")
          if (!accounts.has(key)) accounts.set(key, newAccount(entry.key[0], entry.key[1], true, 0n))
          return {
            account: accounts.get(key)!,
            charged: entry.charged,
            returned: entry.returned,
            requests: entry.requests
          }
        }
        const batches: Array<Array<Taken>> = [[], [], [], [], []]
        entries.forEach((entry, index) => batches[cuts[index]].push(entryOf(entry)))
        const sums = (list: ReadonlyArray<Taken>) =>
          Object.fromEntries(
            [...new Set(list.map((entry) => `${entry.account.subject}:${entry.account.id}`))].map((key) => {
              const mine = list.filter((entry) => `${entry.account.subject}:${entry.account.id}` === key)
              return [key, {
                charged: mine.reduce((sum, entry) => sum + entry.charged, 0n),
                returned: mine.reduce((sum, entry) => sum + entry.returned, 0n),
                requests: mine.reduce((sum, entry) => sum + entry.requests, 0)
              }]
            })
          )
        const merged = mergeTaken(batches)
        strictEqual(new Set(merged.map((entry) => entry.account)).size, merged.length, "one entry per account")
        deepStrictEqual(sums(merged), sums(batches.flat()))
      }
    )
  )
})

Deno.test("withdrawn: takes the amount off the named accounts and one request off the user, nothing else", () => {
  const user = newAccount("user", 1n, true, 0n)
  const token = newAccount("token", 2n, false, 0n)
  const other = newAccount("user", 9n, true, 0n)
  const taken: Array<Taken> = [
    { account: user, charged: 500n, returned: 3n, requests: 4 },
    { account: token, charged: 500n, returned: 0n, requests: 0 },
    { account: other, charged: 70n, returned: 0n, requests: 1 }
  ]
  deepStrictEqual(withdrawn(taken, ["token:2", "user:1"], 200n), [
    { account: user, charged: 300n, returned: 3n, requests: 3 },
    { account: token, charged: 300n, returned: 0n, requests: 0 },
    { account: other, charged: 70n, returned: 0n, requests: 1 }
  ])
})
