/**
 * Password hashing: bcrypt at cost 10 or more, a hash never equal to the
 * password, verification true only for the password, a missing hash always
 * false after a full comparison, and the rules for what a password may be.
 */
import { ok, strictEqual } from "node:assert/strict"
import {
  costOf,
  generatePassword,
  hashPassword,
  PASSWORD_COST,
  passwordProblem,
  verifyPassword
} from "../../src/domain/Password.ts"

Deno.test("password: bcrypt hashes at cost 10 or more verify only their password", async () => {
  ok(PASSWORD_COST >= 10)
  const hash = await hashPassword("correct horse battery")
  strictEqual(costOf(hash), PASSWORD_COST)
  ok(hash.startsWith("$2b$") && !hash.includes("correct"))
  strictEqual(await verifyPassword("correct horse battery", hash), true)
  strictEqual(await verifyPassword("correct horse batterY", hash), false)
  strictEqual(await verifyPassword("", hash), false)
})

Deno.test("password: no hash (no such user) compares against a decoy and answers false", async () => {
  const started = performance.now()
  strictEqual(await verifyPassword("anything at all", undefined), false)
  strictEqual(await verifyPassword("anything at all", null), false)
  strictEqual(await verifyPassword("anything at all", "not-a-hash"), false)
  // Three bcrypt comparisons at cost 10 take tens of milliseconds, not the microseconds of an early return.
  ok(performance.now() - started > 15)
})

Deno.test("password: the rules", () => {
  strictEqual(passwordProblem("long-enough"), undefined)
  ok(passwordProblem("short")?.includes("at least 8"))
  ok(passwordProblem("x".repeat(73))?.includes("72 bytes"))
  ok(passwordProblem("é".repeat(37))?.includes("72 bytes"), "bytes, not characters")
  ok(passwordProblem("abcdefgh\u0000")?.includes("characters"))
  ok(passwordProblem("abcdefgh\ud800")?.includes("characters"))
  strictEqual(passwordProblem(generatePassword()), undefined)
})
