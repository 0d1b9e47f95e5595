/**
 * The image families' rules as pure functions: default families by name, the
 * flare tier table (every preset to its actual size), the pro image family's
 * `<ratio>(2K|4K)` presets, fixed size lists, quality defaults and values.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import {
  defaultImageFamily,
  isViolation,
  resolveQuality,
  resolveSize,
  TIER_RATIOS,
  TIER_SIZES
} from "../../../src/formats/images/ImageFamilies.ts"

Deno.test("defaultImageFamily: the spec's names, nothing for other names", () => {
  strictEqual(defaultImageFamily("dall-e-2"), "dall-e-2")
  strictEqual(defaultImageFamily("dall-e-3"), "dall-e-3")
  strictEqual(defaultImageFamily("gpt-image-1"), "gpt-image")
  strictEqual(defaultImageFamily("gpt-image-1-mini"), "gpt-image")
  strictEqual(defaultImageFamily("dall-e-3-hd"), undefined)
  strictEqual(defaultImageFamily("gpt-4o"), undefined)
})

Deno.test("resolveSize: every flare preset maps to the table's actual size and tier", () => {
  for (const ratio of TIER_RATIOS) {
    deepStrictEqual(resolveSize("flare", ratio), { size: TIER_SIZES["1K"][ratio], tier: "1K" })
    deepStrictEqual(resolveSize("sunburst", TIER_SIZES["4K"][ratio]), { size: TIER_SIZES["4K"][ratio], tier: "4K" })
    deepStrictEqual(resolveSize("pro-image", `${ratio}(2K)`), { size: TIER_SIZES["2K"][ratio], tier: "2K" })
    deepStrictEqual(resolveSize("pro-image", `${ratio}(4K)`), { size: TIER_SIZES["4K"][ratio], tier: "4K" })
    ok(isViolation(resolveSize("flare", `${ratio}(4K)`)))
  }
  deepStrictEqual(resolveSize("flare", "2K"), { size: "2048x2048", tier: "2K" })
  ok(isViolation(resolveSize("flare", "8K")))
})

Deno.test("resolveSize: fixed lists for the OpenAI families, any WxH without a family", () => {
  deepStrictEqual(resolveSize("dall-e-2", "256x256"), { size: "256x256" })
  strictEqual((resolveSize("dall-e-2", "1024x1792") as { param: string }).param, "size")
  deepStrictEqual(resolveSize("dall-e-3", "1792x1024"), { size: "1792x1024" })
  ok(isViolation(resolveSize("dall-e-3", "256x256")))
  deepStrictEqual(resolveSize("gpt-image", "1536x1024"), { size: "1536x1024" })
  deepStrictEqual(resolveSize(undefined, "640x480"), { size: "640x480" })
  ok(isViolation(resolveSize(undefined, "16:9")))
  ok(isViolation(resolveSize(undefined, "0x10")))
})

Deno.test("resolveQuality: defaults and allowed values per family", () => {
  deepStrictEqual(resolveQuality("dall-e-3", undefined), { quality: "standard" })
  deepStrictEqual(resolveQuality("gpt-image", undefined), { quality: "auto" })
  deepStrictEqual(resolveQuality("dall-e-2", undefined), { quality: undefined })
  deepStrictEqual(resolveQuality("flare", "xhigh"), { quality: "xhigh" })
  deepStrictEqual(resolveQuality("pro-image", "max"), { quality: "max" })
  ok(isViolation(resolveQuality("gpt-image", "xhigh")))
  ok(isViolation(resolveQuality("dall-e-3", "auto")))
  deepStrictEqual(resolveQuality(undefined, "anything"), { quality: "anything" })
})
