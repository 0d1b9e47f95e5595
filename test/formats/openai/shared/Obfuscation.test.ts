import { notStrictEqual, ok, strictEqual } from "node:assert/strict"
import { obfuscationFor, PAD_BLOCK } from "../../../../src/formats/openai/shared/Obfuscation.ts"

Deno.test("obfuscationFor pads a delta to the next multiple of PAD_BLOCK with random letters and digits", () => {
  for (const delta of ["", "a", "Hello", "x".repeat(PAD_BLOCK - 1), "x".repeat(PAD_BLOCK), "y".repeat(1000)]) {
    const padding = obfuscationFor(delta)
    ok(/^[A-Za-z0-9]+$/.test(padding))
    ok(padding.length >= 1 && padding.length <= PAD_BLOCK)
    strictEqual((delta.length + padding.length) % PAD_BLOCK, 0)
  }
  // Random: two paddings of one delta differ (a 1 in 62^31 chance of a false failure).
  notStrictEqual(obfuscationFor("a"), obfuscationFor("a"))
})
