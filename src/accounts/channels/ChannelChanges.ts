/**
 * What an admin's channel change asks for, decided over plain values: the
 * base URL's check, a new channel's defaults, a patch merged onto the stored
 * channel (masked values sent back keep what is stored), the rule that
 * moving the keys elsewhere needs them given again, and what the audit row
 * shows of each change (secrets masked). Pure.
 *
 * @since 0.1.0
 */
import type { ChannelSpec } from "../../config/BootstrapFile.ts"
import {
  baseUrlOf,
  bedrockRuntimeUrl,
  settingsProblem,
  VERTEX_DEFAULT_LOCATION,
  vertexBaseUrl
} from "../../domain/ChannelType.ts"
import { MASKED, maskKey, maskSettings, maskUrl } from "./ChannelMasking.ts"
import type { ChannelFields, ChannelRow } from "./ChannelViews.ts"

/** A new channel: the bootstrap file's channel fields. @category models */
export type NewChannel = typeof ChannelSpec.Type

/** A new channel whose base URL is known (given, or its type's default). @category models */
export type PlacedChannel = NewChannel & { readonly base_url: string }

/** A change: `id` and any channel field; `keys` replaces the list. @category models */
export type ChannelPatch = { readonly id: number } & Partial<NewChannel>

/** Why a change is refused, and the request field (`param`) it names. @category models */
export interface Refusal {
  readonly message: string
  readonly param: string
}

/** A change that may be written: the channel's fields after it and its keys (in order). @category models */
export interface PlannedChange {
  readonly fields: ChannelFields
  readonly keys: ReadonlyArray<string>
}

/** Why `value` cannot be a base URL (not an http or https URL), or `undefined` when it can or is not given. */
export const urlRefusal = (value: string | undefined): Refusal | undefined => {
  if (value === undefined) return undefined
  let url: URL | undefined
  try {
    url = new URL(value)
  } catch {
    url = undefined
  }
  return url !== undefined && (url.protocol === "http:" || url.protocol === "https:")
    ? undefined
    : { message: "base_url must be an http or https URL.", param: "base_url" }
}

/**
 * Why `keys` cannot be stored, or `undefined` when they can (or are not
 * given): a key holding `…` (`MASKED`, what `maskKey` puts in the keys the
 * admin answers show) is such an answer sent back, not a key, and stored as
 * one it would quietly break the channel. `param` names the first such key
 * (`keys[2]`). A change that keeps the stored keys leaves `keys` out.
 */
export const maskedKeyRefusal = (keys: ReadonlyArray<string> | undefined): Refusal | undefined => {
  const index = keys?.findIndex((key) => key.includes(MASKED)) ?? -1
  if (index === -1) return undefined
  const param = `keys[${index}]`
  return {
    message: `${param} is a masked key (it holds "${MASKED}", as the channel list shows keys), not a key: ` +
      "give the whole key, or leave keys out to keep the stored ones.",
    param
  }
}

/** A `vertex` channel without `settings.project` refused (`settings.project`); else `undefined`. */
const projectRefusal = (type: string, settings: { readonly project?: string | undefined } | undefined) =>
  type === "vertex" && settings?.project === undefined
    ? {
      message: "settings.project is missing (a vertex channel calls one Google Cloud project).",
      param: "settings.project"
    }
    : undefined

/**
 * `input` with its base URL: the given one, else its type's default (`deepseek`: `https://api.deepseek.com`,
 * `DEFAULT_BASE_URLS`; `vertex`: its location's endpoint; `bedrock`: its region's endpoint); refused (`base_url`) when
 * it gives none and its type has no default, (`settings.project`) a `vertex` channel without a project, and
 * (`settings.region`) a `bedrock` channel without a valid region (`settingsProblem`).
 */
export const placed = (input: NewChannel): PlacedChannel | Refusal => {
  const noProject = projectRefusal(input.type, input.settings)
  if (noProject !== undefined) return noProject
  const problem = settingsProblem(input.type, input.settings)
  if (problem !== undefined) return problem
  const baseUrl = baseUrlOf(input.type, input.base_url, input.settings)
  return baseUrl === undefined
    ? { message: `base_url is missing (channel type ${input.type} has no default base URL).`, param: "base_url" }
    : { ...input, base_url: baseUrl }
}

/**
 * The base URL of a changed `vertex` channel: when its location changes and its base URL is the old location's
 * endpoint (the default it was given), the new location's endpoint; likewise a `bedrock` channel's region; otherwise
 * `baseUrl`.
 */
const relocated = (
  type: string,
  baseUrl: string,
  before: { readonly location?: string | undefined; readonly region?: string | undefined } | undefined,
  after: { readonly location?: string | undefined; readonly region?: string | undefined } | undefined
): string => {
  if (type === "bedrock") {
    const from = before?.region
    const to = after?.region
    const moved = from !== undefined && to !== undefined && from !== to && baseUrl === bedrockRuntimeUrl(from)
    return moved ? bedrockRuntimeUrl(to) ?? baseUrl : baseUrl
  }
  if (type !== "vertex") return baseUrl
  const from = before?.location ?? VERTEX_DEFAULT_LOCATION
  const to = after?.location ?? VERTEX_DEFAULT_LOCATION
  return from !== to && baseUrl === vertexBaseUrl(from) ? vertexBaseUrl(to) : baseUrl
}

/** A new channel's fields: groups `["default"]`, priority 0, weight 1, enabled, no mapping and no settings unless given. */
export const newChannelFields = (input: PlacedChannel): ChannelFields => ({
  name: input.name,
  type: input.type,
  baseUrl: input.base_url,
  models: input.models,
  groups: input.groups ?? ["default"],
  priority: input.priority ?? 0,
  weight: input.weight ?? 1,
  modelMapping: input.model_mapping ?? {},
  settings: input.settings ?? {},
  enabled: input.enabled ?? true
})

/**
 * The headers a change asks for: a value sent back as `…` (as the admin
 * answer showed it) keeps the stored value of that header.
 */
export const mergeHeaders = (
  given: Readonly<Record<string, string>> | undefined,
  stored: Readonly<Record<string, string>> | undefined
): Record<string, string> | undefined =>
  given === undefined ? undefined : Object.fromEntries(
    Object.entries(given).map(([name, value]) => [name, value === MASKED ? stored?.[name] ?? "" : value])
  )

/** Whether two header sets hold the same names with the same values, in any order. */
export const sameHeaders = (
  left: Readonly<Record<string, string>> | undefined,
  right: Readonly<Record<string, string>> | undefined
): boolean => {
  const a = Object.entries(left ?? {}).sort(([x], [y]) => x < y ? -1 : 1)
  const b = Object.entries(right ?? {}).sort(([x], [y]) => x < y ? -1 : 1)
  return a.length === b.length && a.every(([name, value], index) => b[index]![0] === name && b[index]![1] === value)
}

/**
 * `patch` merged onto the stored channel `current` whose keys are
 * `storedKeys`, or why it is refused. A base URL or header value sent back
 * masked (as the admin answer showed it) is no change. Where the stored keys
 * go (host, wire format, headers sent with them) changes only with the keys
 * given again, and a new host or wire format only with the headers given
 * again: otherwise an admin could point a channel at a host of theirs and
 * test it to read the secrets. A channel keeps at least one key.
 */
export const planUpdate = (
  current: ChannelRow,
  patch: ChannelPatch,
  storedKeys: ReadonlyArray<string>
): Refusal | PlannedChange => {
  const headers = mergeHeaders(patch.settings?.headers, current.settings?.headers)
  const settings = patch.settings === undefined
    ? current.settings
    : { ...patch.settings, ...(headers === undefined ? {} : { headers }) }
  const type = patch.type ?? current.type
  const noProject = projectRefusal(type, settings)
  if (noProject !== undefined) return noProject
  const problem = settingsProblem(type, settings)
  if (problem !== undefined) return problem
  // A vertex (bedrock) channel on its location's (region's) default endpoint moves with it (the hosts are Google's
  // (AWS's) only).
  const followed = relocated(type, current.baseUrl, current.settings, settings)
  const baseUrl = patch.base_url === undefined || patch.base_url === maskUrl(current.baseUrl)
    ? followed
    : patch.base_url
  const rehomed = (baseUrl !== current.baseUrl && baseUrl !== followed) ||
    (patch.type !== undefined && patch.type !== current.type)
  const moved = rehomed || !sameHeaders(settings?.headers, current.settings?.headers)
  // The stored header values (tokens) do not follow a channel to another host or wire format either.
  const keptHeaders = Object.keys(current.settings?.headers ?? {}).length > 0 &&
    (patch.settings?.headers === undefined ||
      Object.values(patch.settings.headers).some((value) => value === MASKED))
  if (rehomed && keptHeaders) {
    return {
      message: "Changing base_url or type needs the channel's settings.headers given again.",
      param: "settings.headers"
    }
  }
  if (moved && patch.keys === undefined) {
    return {
      message: "Changing base_url, type or settings.headers needs the channel's keys given again.",
      param: "keys"
    }
  }
  const keys = patch.keys ?? storedKeys
  if (keys.length === 0) return { message: "A channel needs at least one key.", param: "keys" }
  return {
    keys,
    fields: {
      name: patch.name ?? current.name,
      type: patch.type ?? current.type,
      baseUrl,
      models: patch.models ?? current.models,
      groups: patch.groups ?? current.groups,
      priority: patch.priority ?? current.priority,
      weight: patch.weight ?? current.weight,
      modelMapping: patch.model_mapping ?? current.modelMapping,
      settings,
      enabled: patch.enabled ?? current.enabled
    }
  }
}

/** Whether `planUpdate` refused the change. */
export const isRefusal = <A extends object>(outcome: Refusal | A): outcome is Refusal =>
  "message" in outcome && "param" in outcome

/** What the audit row of a new channel shows after it: the input, its URL, header values and keys masked. */
export const createdAudit = (input: PlacedChannel): unknown => {
  const { keys: _keys, ...shown } = input
  return {
    ...shown,
    base_url: maskUrl(input.base_url),
    ...(input.settings === undefined ? {} : { settings: maskSettings(input.settings) }),
    keys: input.keys.map(maskKey)
  }
}

/** What the audit row of a change shows after it: the patch, its URL, header values and keys masked. */
export const updatedAudit = (patch: ChannelPatch): unknown => {
  const { keys: newKeys, ...shown } = patch
  return {
    ...shown,
    ...(patch.base_url === undefined ? {} : { base_url: maskUrl(patch.base_url) }),
    ...(patch.settings === undefined ? {} : { settings: maskSettings(patch.settings) }),
    ...(newKeys === undefined ? {} : { keys: newKeys.map(maskKey) })
  }
}
