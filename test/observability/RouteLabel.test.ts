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
  strictEqual(routeOf("/v1/audio/speech"), "/v1/audio/speech")
  strictEqual(routeOf("/v2/rerank"), "/v2/rerank")
  strictEqual(routeOf("/v1/realtime"), "/v1/realtime")
  strictEqual(routeOf("/v1/videos/video_abc/content?variant=thumbnail"), "/v1/videos/{id}/content")
  strictEqual(routeOf("/v1/videos/video_abc/remix"), "/v1/videos/{id}/remix")
  strictEqual(routeOf("/v1/videos/sk-secret/evil"), "/v1/videos/{id}")
  strictEqual(routeOf("/v1/video/generations/task_1"), "/v1/video/generations/{id}")
  strictEqual(routeOf("/v1/images/generations/async/img_1"), "/v1/images/generations/async/{id}")
  strictEqual(routeOf("/v1/images/content/img_1"), "/v1/images/content/{id}")
  strictEqual(routeOf("/v1/files?limit=2"), "/v1/files")
  strictEqual(routeOf("/v1/files/file-abc"), "/v1/files/{id}")
  strictEqual(routeOf("/v1/files/file-abc/content"), "/v1/files/{id}/content")
  strictEqual(routeOf("/mj/submit/imagine"), "/mj/*")
  strictEqual(routeOf("/kling/v1/videos/text2video/t1"), "/kling/v1/*")
  strictEqual(routeOf("/%00\u0000/evil"), "other")
})

Deno.test("route labels: any path maps into a small fixed set", () => {
  const known = new Set<string>()
  fc.assert(
    fc.property(
      fc.string({ maxLength: 200 }),
      fc.constantFrom("", "/v1beta/models/", "/v1/models/", "/api/", "/v1/videos/", "/v1/images/content/", "/mj/"),
      (rest, prefix) => {
        known.add(routeOf(prefix + rest))
      }
    )
  )
  for (const label of known) {
    strictEqual(
      /^(\/v1beta\/models\/\{model\}(:\w+)?|\/v1\/models\/\{model\}(:\w+)?|\/api\/\*|\/mj\/\*|other|\/[a-z0-9/_]+(\{id\}(\/[a-z]+)?)?)$/
        .test(label),
      true,
      label
    )
  }
  strictEqual(known.size <= 30, true)
})
