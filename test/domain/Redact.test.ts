import { ok, strictEqual } from "node:assert/strict"
import { maskSecrets, registerKnownSecrets, safeVendorText } from "../../src/domain/Redact.ts"

Deno.test("maskSecrets: vendor key shapes, bearer tokens and labelled values are masked", () => {
  const openAi = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
  const anthropic = "sk-ant-api03-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp"
  const google = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
  const text = `Incorrect API key provided: ${openAi}. Also ${anthropic} and key=${google}; ` +
    `Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc123 and api_key="hunter2secret" and sk-test-primary`
  const masked = maskSecrets(text)
  for (const secret of [openAi, anthropic, google, "eyJhbGciOiJIUzI1NiJ9", "hunter2secret", "sk-test-primary"]) {
    strictEqual(masked.includes(secret), false, `${secret} in ${masked}`)
  }
  ok(masked.startsWith("Incorrect API key provided: sk-[redacted]."), masked)
  ok(masked.includes("Bearer [redacted]"), masked)
})

Deno.test("maskSecrets: long hex and base64 runs are masked, ordinary text is kept", () => {
  const hex = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
  const base64 = "dGhpcyBpcyBhIHNlY3JldCBrZXkgMTIzNDU2Nzg5MA=="
  strictEqual(maskSecrets(`digest ${hex} token ${base64}`), "digest [redacted] token [redacted]")
  const ordinary = [
    "messages.0.content: Input should be a valid string; model claude-3-5-sonnet-20241022 is not found",
    "request 123e4567-e89b-12d3-a456-426614174000 failed; see https://ai.google.dev/gemini-api/docs/rate-limits",
    "quota GenerateRequestsPerDayPerProjectPerModel-FreeTier on generativelanguage.googleapis.com/generate_content_free_tier_requests",
    "Bearer authentication is required; the key: messages[0].content is invalid; sk-learn is a library",
    "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing."
  ]
  for (const text of ordinary) strictEqual(maskSecrets(text), text)
})

Deno.test("maskSecrets and safeVendorText: linear on megabytes of hostile text", () => {
  const chunks = [
    "a".repeat(31) + " ",
    "sk-" + "x".repeat(7) + " ",
    "Bearer ab ",
    "\u0000\ud800",
    "A1".repeat(15) + "-"
  ]
  const hostile = chunks.join("").repeat(Math.ceil(1_000_000 / chunks.join("").length))
  const started = performance.now()
  const safe = safeVendorText(hostile + " sk-test-" + "k".repeat(40), 200)
  const elapsed = performance.now() - started
  ok(elapsed < 2000, `took ${elapsed} ms`)
  ok(safe.length <= 200)
  strictEqual(safe.includes("\u0000"), false)
  strictEqual(safe.isWellFormed(), true)
  ok(safe.endsWith("…"))
})

Deno.test("safeVendorText: controls and lone surrogates are replaced, a pair is not split, short text is kept", () => {
  strictEqual(safeVendorText("bad\u0000field\ud800 x"), "bad field\ufffd x")
  strictEqual(safeVendorText("temperature is invalid"), "temperature is invalid")
  const cut = safeVendorText("ab\u{1F600}cd", 4)
  strictEqual(cut, "ab…")
  strictEqual(safeVendorText(`key sk-test-${"z".repeat(30)} end`, 15), "key sk-[redact…")
})

Deno.test("maskSecrets: configured secrets are masked by value, whatever their shape; short values are not", () => {
  const owner = {}
  try {
    registerKnownSecrets(owner, ["3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f", "tok-77a", "true", "a.b*c+d"])
    strictEqual(
      maskSecrets("key 3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f and tok-77a, a.b*c+d; true"),
      "key [redacted] and [redacted], [redacted]; true"
    )
    // A thousand keys over a megabyte of text stays fast.
    registerKnownSecrets(owner, Array.from({ length: 1000 }, (_, index) => `key-${index}-${"x".repeat(20)}`))
    const started = performance.now()
    maskSecrets("lorem ipsum ".repeat(90_000))
    ok(performance.now() - started < 2000)
  } finally {
    registerKnownSecrets(owner, [])
  }
  strictEqual(maskSecrets("tok-77a"), "tok-77a")
})
