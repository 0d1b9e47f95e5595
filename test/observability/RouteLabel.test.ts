/**
 * Route labels are bounded: a fixed route is itself, a model route is its
 * pattern whatever the model, and any other path (hostile text included) is
 * one of two catch-alls, so no caller text becomes a label or a log field.
 */
import { strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { routeOf } from "../../src/observability/RouteLabel.ts"

Deno.test("route labels: fixed routes, model-route patterns, catch-alls", () => {
  strictEqual(routeOf("/v1/chat/completions"), "/v1/chat/completions")
  strictEqual(routeOf("/v1/chat/completions?x=1"), "/v1/chat/completions")
  strictEqual(
    routeOf("/v1beta/models/gemini-2.5:streamGenerateContent?alt=sse&key=k"),
    "/v1beta/models/{model}:streamGenerateContent"
  )
  strictEqual(routeOf("/v1/models/x:countTokens"), "/v1/models/{model}:countTokens")
  strictEqual(routeOf("/v1beta/models/sk-secret:unknownMethod"), "/v1beta/models/{model}")
  strictEqual(routeOf("/v1/models/gpt-4o"), "/v1/models/{model}")
  strictEqual(routeOf("/v1/images/generations"), "/v1/images/generations")
  strictEqual(routeOf("/v1/images/edits"), "/v1/images/edits")
  strictEqual(routeOf("/api/user/self"), "/api/*")
  strictEqual(routeOf("/%00\u0000/evil"), "other")
})

Deno.test("route labels: any path maps into a small fixed set", () => {
  const known = new Set<string>()
  fc.assert(
    fc.property(
      fc.string({ maxLength: 200 }),
      fc.constantFrom("", "/v1beta/models/", "/v1/models/", "/api/"),
      (rest, prefix) => {
        known.add(routeOf(prefix + rest))
      }
    )
  )
  for (const label of known) {
    strictEqual(
      /^(\/v1beta\/models\/\{model\}(:\w+)?|\/v1\/models\/\{model\}(:\w+)?|\/api\/\*|other|\/[a-z/]+)$/.test(label),
      true,
      label
    )
  }
  strictEqual(known.size <= 30, true)
})
