/**
 * The image model families and their rules (spec, "Endpoints: Images" and
 * "Limits"). A model's family comes from the bootstrap file's
 * `models.<name>.family`, else from its name (`defaultImageFamily`); a model
 * with no family gets only the rules every image request has.
 *
 * - `dall-e-2` (second-generation art model): sizes 256x256, 512x512, 1024x1024.
 * - `dall-e-3` (third-generation art model): sizes 1024x1024, 1024x1792,
 *   1792x1024; quality `standard` (default) or `hd`; one image per request
 *   (platform.openai.com/docs/api-reference/images/create).
 * - `gpt-image` (first-generation image model): quality `low|medium|high|auto`,
 *   default `auto`; sizes 1024x1024, 1536x1024, 1024x1536, `auto`.
 * - `flare` and `sunburst`: quality `low|medium|high|xhigh|max|auto`; sizes from
 *   the tier table: a preset (`<ratio>` for the base tier, `1K`/`2K`/`4K` for a
 *   tier's 1:1) or one of the table's `WxH`, and the actual `WxH` is sent.
 * - `pro-image`: the flare rules, plus `<ratio>(2K)` and `<ratio>(4K)`.
 *
 * @since 0.1.0
 */

/** The image families. @category models */
export const IMAGE_FAMILIES = ["dall-e-2", "dall-e-3", "gpt-image", "flare", "sunburst", "pro-image"] as const

/** @category models */
export type ImageFamily = typeof IMAGE_FAMILIES[number]

/** The tiers of the flare size table. @category models */
export type SizeTier = "1K" | "2K" | "4K"

/** The ratios of the flare size table. @category models */
export const TIER_RATIOS = ["1:1", "4:3", "3:2", "2:3", "16:9", "9:16"] as const

/** Spec "Limits": the flare (and sunburst) model's presets → actual size, by tier (base = `1K`). @category rules */
export const TIER_SIZES: Record<SizeTier, Record<typeof TIER_RATIOS[number], string>> = {
  "1K": {
    "1:1": "1024x1024",
    "4:3": "1536x1152",
    "3:2": "1536x1024",
    "2:3": "1024x1536",
    "16:9": "1920x1080",
    "9:16": "1080x1920"
  },
  "2K": {
    "1:1": "2048x2048",
    "4:3": "2048x1536",
    "3:2": "2560x1712",
    "2:3": "1712x2560",
    "16:9": "2048x1152",
    "9:16": "1152x2048"
  },
  "4K": {
    "1:1": "2880x2880",
    "4:3": "3840x2880",
    "3:2": "3840x2560",
    "2:3": "2560x3840",
    "16:9": "3840x2160",
    "9:16": "2160x3840"
  }
}

/**
 * The family of a model named `name` when the bootstrap file gives none: the
 * spec's names (`dall-e-2`, `dall-e-3`, `gpt-image-1` and its `gpt-image-*`
 * siblings), else `undefined`.
 *
 * @category rules
 */
export const defaultImageFamily = (name: string): ImageFamily | undefined =>
  name === "dall-e-2"
    ? "dall-e-2"
    : name === "dall-e-3"
    ? "dall-e-3"
    : name.startsWith("gpt-image-")
    ? "gpt-image"
    : undefined

/** Whether `value` names an image family. @category rules */
export const isImageFamily = (value: string | undefined): value is ImageFamily =>
  (IMAGE_FAMILIES as ReadonlyArray<string | undefined>).includes(value)

/** Quality values by family (first = default when the family has one), `undefined` = any. */
const QUALITIES: Record<ImageFamily, { readonly allowed: ReadonlyArray<string>; readonly default?: string }> = {
  "dall-e-2": { allowed: ["standard"] },
  "dall-e-3": { allowed: ["standard", "hd"], default: "standard" },
  "gpt-image": { allowed: ["low", "medium", "high", "auto"], default: "auto" },
  flare: { allowed: ["low", "medium", "high", "xhigh", "max", "auto"] },
  sunburst: { allowed: ["low", "medium", "high", "xhigh", "max", "auto"] },
  "pro-image": { allowed: ["low", "medium", "high", "xhigh", "max", "auto"] }
}

/** The most images one request may ask for, by family (OpenAI: dall-e-3 only 1, others 1–10). */
const MAX_N: Record<ImageFamily, number> = {
  "dall-e-2": 10,
  "dall-e-3": 1,
  "gpt-image": 10,
  flare: 10,
  sunburst: 10,
  "pro-image": 10
}

/** The most images any request may ask for (a model with no family). @category rules */
export const MAX_IMAGES = 10

/** The longest prompt, in characters, by family (OpenAI's limits: 1000, 4000, 32000), else this default. */
const MAX_PROMPT: Record<ImageFamily, number> = {
  "dall-e-2": 1000,
  "dall-e-3": 4000,
  "gpt-image": 32000,
  flare: 32000,
  sunburst: 32000,
  "pro-image": 32000
}

/** The longest prompt for a model with no family, in characters. @category rules */
export const MAX_PROMPT_DEFAULT = 32000

/** The most images `family` allows in one request. @category rules */
export const maxImages = (family: ImageFamily | undefined): number => family === undefined ? MAX_IMAGES : MAX_N[family]

/** The longest prompt `family` allows, in characters. @category rules */
export const maxPromptLength = (family: ImageFamily | undefined): number =>
  family === undefined ? MAX_PROMPT_DEFAULT : MAX_PROMPT[family]

/** A rule broken: the caller-safe message and the field it names. @category models */
export interface Violation {
  readonly message: string
  readonly param: string
}

/** A size resolved: the actual `WxH` to send, and its tier when it came from the table. @category models */
export interface ResolvedSize {
  readonly size: string
  readonly tier?: SizeTier | undefined
}

const FIXED_SIZES: Partial<Record<ImageFamily, ReadonlyArray<string>>> = {
  "dall-e-2": ["256x256", "512x512", "1024x1024"],
  "dall-e-3": ["1024x1024", "1024x1792", "1792x1024"],
  "gpt-image": ["1024x1024", "1536x1024", "1024x1536", "auto"]
}

/** The table's preset or `WxH` → actual size and tier, or `undefined` when the table has no such entry. */
const tierSize = (value: string, pro: boolean): ResolvedSize | undefined => {
  const ratios = TIER_RATIOS as ReadonlyArray<string>
  if (ratios.includes(value)) return { size: TIER_SIZES["1K"][value as typeof TIER_RATIOS[number]], tier: "1K" }
  if (value === "1K" || value === "2K" || value === "4K") return { size: TIER_SIZES[value]["1:1"], tier: value }
  const preset = /^(\d+:\d+)\((2K|4K)\)$/.exec(value)
  if (pro && preset !== null && ratios.includes(preset[1])) {
    const tier = preset[2] as SizeTier
    return { size: TIER_SIZES[tier][preset[1] as typeof TIER_RATIOS[number]], tier }
  }
  for (const tier of ["1K", "2K", "4K"] as const) {
    if (Object.values(TIER_SIZES[tier]).includes(value)) return { size: value, tier }
  }
  return undefined
}

/**
 * `size` checked against `family`: the size to send, or the violation
 * (`param: "size"`). A model with no family takes any `WxH` (each number
 * 1–16384) as given.
 *
 * @category rules
 */
export const resolveSize = (family: ImageFamily | undefined, size: string): ResolvedSize | Violation => {
  if (family === "flare" || family === "sunburst" || family === "pro-image") {
    const resolved = tierSize(size, family === "pro-image")
    if (resolved !== undefined) return resolved
    const presets = family === "pro-image" ? ", <ratio>(2K), <ratio>(4K)" : ""
    return {
      message: `Invalid size ${quote(size)} for a ${family} model: use a ratio (${
        TIER_RATIOS.join(", ")
      }), 1K, 2K, 4K${presets}, or one of the tier table's sizes.`,
      param: "size"
    }
  }
  const fixed = family === undefined ? undefined : FIXED_SIZES[family]
  if (fixed !== undefined) {
    return fixed.includes(size)
      ? { size }
      : { message: `Invalid size ${quote(size)} for a ${family} model: use one of ${fixed.join(", ")}.`, param: "size" }
  }
  const match = /^(\d{1,5})x(\d{1,5})$/.exec(size)
  if (
    match !== null && Number(match[1]) >= 1 && Number(match[2]) >= 1 && Number(match[1]) <= 16384 &&
    Number(match[2]) <= 16384
  ) {
    return { size }
  }
  return { message: `Invalid size ${quote(size)}: use <width>x<height>.`, param: "size" }
}

/**
 * `quality` checked against `family` (the family's default when absent): the
 * quality to send (`undefined` = the upstream's default), or the violation
 * (`param: "quality"`).
 *
 * @category rules
 */
export const resolveQuality = (
  family: ImageFamily | undefined,
  quality: string | undefined
): { readonly quality: string | undefined } | Violation => {
  if (family === undefined) return { quality }
  const rule = QUALITIES[family]
  if (quality === undefined) return { quality: rule.default }
  return rule.allowed.includes(quality) ? { quality } : {
    message: `Invalid quality ${quote(quality)} for a ${family} model: use one of ${rule.allowed.join(", ")}.`,
    param: "quality"
  }
}

/** Whether a check answered a violation. @category rules */
export const isViolation = (value: object): value is Violation => "param" in value && "message" in value

/** A caller's value quoted for a message: at most 24 characters, control characters escaped. */
const quote = (value: string): string => JSON.stringify(value.length > 24 ? `${value.slice(0, 24)}…` : value)
