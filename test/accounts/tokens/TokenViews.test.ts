/** A `tokens` row as `/api/token` lists it: the prefix for the key, empty lists and limits as none, the kind. */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { type TokenRow, tokenViewOf } from "../../../src/accounts/tokens/TokenViews.ts"

const row: TokenRow = {
  id: 9n,
  name: "ci",
  prefix: "sk-abcd…",
  enabled: true,
  remain: null,
  used: 42n,
  models: null,
  allowIps: [],
  group: null,
  expiresAt: new Date(1_700_000_000_500),
  createdAt: new Date(1_600_000_000_000),
  limits: {},
  keyHash: "0".repeat(64),
  budgets: null
}

Deno.test("TokenViews: a row lists with its prefix, epoch seconds, and empty lists and limits as none", () => {
  deepStrictEqual(tokenViewOf(row, null), {
    id: 9,
    name: "ci",
    key: "sk-abcd…",
    status: "enabled",
    remain_quota: null,
    used_quota: 42,
    models: null,
    allow_ips: null,
    group: null,
    expires_at: 1_700_000_000,
    created_at: 1_600_000_000,
    limits: null,
    kind: "api",
    budgets: null
  })
})

Deno.test("TokenViews: a playground digest lists as kind playground; set limits and IPs show", () => {
  const view = tokenViewOf(
    { ...row, keyHash: "playground:3", enabled: false, remain: 7n, allowIps: ["10.0.0.0/8"], limits: { rpm: 2 } },
    null
  )
  strictEqual(view.kind, "playground")
  strictEqual(view.status, "disabled")
  strictEqual(view.remain_quota, 7)
  deepStrictEqual(view.allow_ips, ["10.0.0.0/8"])
  deepStrictEqual(view.limits, { rpm: 2 })
})
