/**
 * How API keys are stored: hex SHA-256 (FIPS 180-2 test vectors) and a short
 * display prefix.
 */
import { notStrictEqual, strictEqual } from "node:assert/strict"
import { hashKey, keyPrefix } from "../../src/domain/KeyHash.ts"

Deno.test("hashKey: hex SHA-256 of the key", () => {
  strictEqual(hashKey("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
  strictEqual(hashKey(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
})

Deno.test("hashKey: deterministic, 64 lower-case hex digits, distinct per key", () => {
  const digest = hashKey("sk-test-alice-0001")
  strictEqual(digest, hashKey("sk-test-alice-0001"))
  strictEqual(/^[0-9a-f]{64}$/.test(digest), true)
  notStrictEqual(digest, hashKey("sk-test-alice-0002"))
  // UTF-8, not UTF-16 code units.
  notStrictEqual(hashKey("ключ-é"), hashKey("ключ-e"))
})

Deno.test("keyPrefix: the first 7 characters and an ellipsis, never the whole key", () => {
  strictEqual(keyPrefix("sk-test-alice-0001"), "sk-test…")
  strictEqual(keyPrefix("short"), "short…")
})
