/**
 * Prompt estimates: the byte count behind the hold's upper bound is the
 * UTF-8 encoder's, for any string (astral characters, lone surrogates).
 */
import { ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { extraHoldTokens, promptTokensUpperBound, utf8Length } from "../../src/canonical/Estimate.ts"
import type { Request } from "../../src/canonical/Request.ts"

const encoder = new TextEncoder()

Deno.test("utf8Length: equals the encoded length of any string", () => {
  fc.assert(
    fc.property(fc.string({ unit: "binary", maxLength: 64 }), (text) => {
      strictEqual(utf8Length(text), encoder.encode(text).length)
    }),
    { numRuns: 5000 }
  )
  strictEqual(utf8Length("a😀é世\ud800x"), encoder.encode("a😀é世\ud800x").length)
})

Deno.test("promptTokensUpperBound: at least the prompt's UTF-8 bytes plus the allowances", () => {
  const text = "Grüße 😀 世界"
  const bound = promptTokensUpperBound({
    model: "m",
    stream: false,
    messages: [{ role: "user", content: [{ type: "text", text }] }]
  })
  strictEqual(bound, 8 + 8 + encoder.encode(text).length)
})

const asBase64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes))

Deno.test("promptTokensUpperBound: an inline file holds at least a token per byte of its content", () => {
  // A plain-text file can cost a token per byte; its Base64 is 4/3 as long.
  const text = "x\u0000é😀".repeat(300)
  const bytes = encoder.encode(text)
  const bound = promptTokensUpperBound({
    model: "m",
    stream: false,
    messages: [{
      role: "user",
      content: [{ type: "file", source: { kind: "base64", mediaType: "text/plain", data: asBase64(bytes) } }]
    }]
  })
  ok(bound >= 8 + 8 + bytes.length, `${bound} < ${8 + 8 + bytes.length}`)
})

Deno.test("extraHoldTokens: what inlining adds to the bound, never less than nothing", () => {
  const pdf = new Uint8Array(3000).fill(37)
  const original: Request = {
    model: "m",
    stream: false,
    messages: [{
      role: "user",
      content: [
        { type: "image", source: { kind: "url", url: "https://img.test/a.png" } },
        { type: "file", source: { kind: "url", url: "https://docs.test/a.pdf" } },
        { type: "file", source: { kind: "url", url: "https://docs.test/tiny.txt" } }
      ]
    }]
  }
  const inlined: Request = {
    ...original,
    messages: [{
      role: "user",
      content: [
        { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" } },
        { type: "file", source: { kind: "base64", mediaType: "application/pdf", data: asBase64(pdf) } },
        { type: "file", source: { kind: "base64", mediaType: "text/plain", data: "eA==" } }
      ]
    }]
  }
  ok(promptTokensUpperBound(inlined) >= promptTokensUpperBound(original), "inlining never lowers the bound")
  strictEqual(extraHoldTokens(original, inlined), 3000 + 1, "the decoded bytes of the inlined files")
  strictEqual(extraHoldTokens(original, original), 0)
  strictEqual(extraHoldTokens(inlined, original), 0)
})
