/**
 * The decisions of an OAuth login over plain values: public parameters with
 * no secret, a callback's state checks, which user an identity signs in as
 * (never linked to a second user), and no unlinking of the only way in.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import fc from "fast-check"
import type { ProviderSpec } from "../../src/accounts/OAuthProviders.ts"
import { linkPlan, publicClient, stateRefusal, takenState, unlinkRefusal } from "../../src/accounts/OAuthRules.ts"

Deno.test("OAuthRules: a provider's public parameters carry no secret", () => {
  const spec = { type: "github", client_id: "id-1", client_secret: "shh-secret" } as ProviderSpec
  const client = publicClient("gh", spec, "https://github.com/login/oauth/authorize", "https://gw.example")
  strictEqual(client.name, "gh")
  strictEqual(client.type, "github")
  strictEqual(client.client_id, "id-1")
  strictEqual(client.authorization_endpoint, "https://github.com/login/oauth/authorize")
  ok(client.redirect_uri.startsWith("https://gw.example"))
  ok(!JSON.stringify(client).includes("shh-secret"))
  strictEqual(publicClient("gh", spec, null, "https://gw.example").authorization_endpoint, null)
})

Deno.test("OAuthRules: a state is missing when empty or over 128 characters", () => {
  strictEqual(stateRefusal(""), "The sign-in state is missing.")
  strictEqual(stateRefusal("x".repeat(129)), "The sign-in state is missing.")
  strictEqual(stateRefusal("x".repeat(128)), undefined)
})

Deno.test("OAuthRules: a taken state completes only the browser it was issued to", () => {
  const taken = { browser: "digest-a", nonce: "n" }
  strictEqual(takenState(taken, "digest-a"), taken)
  strictEqual(takenState(taken, "digest-b"), "The sign-in was started in another browser.")
  strictEqual(takenState(undefined, "digest-a"), "The sign-in state is unknown, used or expired.")
})

Deno.test("OAuthRules: an identity signs in as its user, is linked to the user asking, never to a second one", () => {
  const id = fc.option(fc.bigInt({ min: 1n, max: 5n }), { nil: undefined })
  fc.assert(fc.property(id, fc.option(fc.bigInt({ min: 1n, max: 5n }), { nil: null }), (bound, linking) => {
    const plan = linkPlan("gh", bound, linking)
    if (linking === null) deepStrictEqual(plan, { _tag: "signIn", userId: bound })
    else if (bound === undefined) deepStrictEqual(plan, { _tag: "link", userId: linking })
    else if (bound === linking) deepStrictEqual(plan, { _tag: "signIn", userId: linking })
    else deepStrictEqual(plan, { _tag: "refused", message: "This gh account is already linked to another user." })
  }))
})

Deno.test("OAuthRules: an identity is unlinked only when linked and not the only way to sign in", () => {
  strictEqual(unlinkRefusal(undefined, false), "Your account is not linked to this provider.")
  strictEqual(unlinkRefusal({ hasPassword: true, links: 1 }, false), "Your account is not linked to this provider.")
  strictEqual(
    unlinkRefusal({ hasPassword: false, links: 1 }, true),
    "This is your only way to sign in; set a password before unlinking it."
  )
  strictEqual(unlinkRefusal({ hasPassword: false, links: 2 }, true), undefined)
  strictEqual(unlinkRefusal({ hasPassword: true, links: 1 }, true), undefined)
})
