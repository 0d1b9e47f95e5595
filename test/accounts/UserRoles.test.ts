/**
 * Who may manage whom, over every pair of roles: a caller manages only users
 * ranked below it (itself where allowed) and grants only roles below its own.
 */
import { ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { roleRank } from "../../src/accounts/Sessions.ts"
import { grantRefusal, manageRefusal, roleOf } from "../../src/accounts/UserRoles.ts"

const role = fc.constantFrom("user" as const, "admin" as const, "root" as const)

Deno.test("UserRoles: a caller manages exactly the users ranked below it, and itself where allowed", () => {
  fc.assert(fc.property(role, role, fc.boolean(), fc.boolean(), (caller, target, self, allowSelf) => {
    const refusal = manageRefusal(7n, caller, { id: self ? 7 : 8, role: target }, allowSelf)
    const allowed = (self && allowSelf) || roleRank(target) < roleRank(caller)
    strictEqual(refusal === undefined, allowed)
    if (refusal !== undefined) strictEqual(refusal, `A ${caller} cannot manage a ${target} user.`)
  }))
})

Deno.test("UserRoles: a caller grants only roles below its own; granting none is always allowed", () => {
  fc.assert(fc.property(role, fc.option(role, { nil: undefined }), (caller, granted) => {
    const refusal = grantRefusal(caller, granted)
    strictEqual(refusal === undefined, granted === undefined || roleRank(granted) < roleRank(caller))
    if (refusal !== undefined) ok(refusal.includes(`cannot grant the role ${granted}`))
  }))
})

Deno.test("UserRoles: a stored role other than root or admin reads as user", () => {
  fc.assert(fc.property(fc.string({ maxLength: 8 }), (stored) => {
    strictEqual(roleOf(stored), stored === "root" || stored === "admin" ? stored : "user")
  }))
})
