/**
 * A channel's secrets as admin answers and audit rows show them: keys cut to
 * their ends only when long, header values and URL credentials and query
 * values replaced, the rest of a URL kept as written.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { MASKED, maskKey, maskSettings, maskUrl } from "../../../src/accounts/channels/ChannelMasking.ts"

Deno.test("ChannelMasking: a long key shows its first 3 and last 4 characters, a short one nothing", () => {
  fc.assert(fc.property(fc.string({ minLength: 0, maxLength: 40 }), (key) => {
    const shown = maskKey(key)
    if (key.length < 20) strictEqual(shown, "…")
    else strictEqual(shown, `${key.slice(0, 3)}…${key.slice(-4)}`)
  }))
})

Deno.test("ChannelMasking: every header value is masked, the other settings kept", () => {
  deepStrictEqual(maskSettings({ headers: { "api-key": "secret", "x-proxy": "token" }, auto_disable: true }), {
    headers: { "api-key": MASKED, "x-proxy": MASKED },
    auto_disable: true
  })
  deepStrictEqual(maskSettings({ responses_api: true }), { responses_api: true })
  strictEqual(maskSettings(undefined), undefined)
})

Deno.test("ChannelMasking: URL credentials and query values are masked; a plain URL is shown as written", () => {
  strictEqual(maskUrl("https://api.example.com/v1"), "https://api.example.com/v1")
  strictEqual(maskUrl("https://user:pass@api.example.com/v1"), "https://…@api.example.com/v1")
  strictEqual(maskUrl("https://api.example.com/v1?key=abc&x=1"), "https://api.example.com/v1?key=…&x=…")
  strictEqual(maskUrl("http://host?token=abc"), "http://host?token=…")
  strictEqual(maskUrl("http://host/?token=abc"), "http://host/?token=…")
  strictEqual(maskUrl("not a url"), MASKED)
})

Deno.test("ChannelMasking: no query value or password is ever shown", () => {
  const secret = fc.stringMatching(/^[A-Za-z0-9]{12,20}$/)
  fc.assert(fc.property(secret, secret, (password, token) => {
    const shown = maskUrl(`https://me:${password}@api.example.com/v1?token=${token}`)
    ok(!shown.includes(password) && !shown.includes(token), shown)
  }))
})
