/**
 * An admin's channel change decided over plain values: base URL checks, a
 * new channel's defaults, masked values sent back keeping what is stored,
 * keys and headers needed again when the keys would go elsewhere, masked
 * keys refused, and the audit rows showing no secret.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import {
  type ChannelPatch,
  createdAudit,
  isRefusal,
  maskedKeyRefusal,
  mergeHeaders,
  newChannelFields,
  placed,
  type PlannedChange,
  planUpdate,
  sameHeaders,
  updatedAudit,
  urlRefusal
} from "../../../src/accounts/channels/ChannelChanges.ts"
import { MASKED, maskKey } from "../../../src/accounts/channels/ChannelMasking.ts"
import type { ChannelRow } from "../../../src/accounts/channels/ChannelViews.ts"

const KEY = "sk-stored-0123456789abcdef"

const stored: ChannelRow = {
  id: 3n,
  name: "main",
  type: "openai",
  baseUrl: "https://user:pw@api.example.com/v1?k=1",
  models: ["gpt-4o"],
  groups: ["default"],
  priority: 0,
  weight: 1,
  modelMapping: {},
  settings: { headers: { "x-token": "header-secret" } },
  enabled: true,
  testedAt: null,
  testLatencyMs: null,
  testError: null
}

const planned = (patch: Omit<ChannelPatch, "id">, current: ChannelRow = stored): PlannedChange => {
  const outcome = planUpdate(current, { id: 3, ...patch }, [KEY])
  if (isRefusal(outcome)) throw new Error(`refused: ${outcome.message}`)
  return outcome
}

const refusedParam = (patch: Omit<ChannelPatch, "id">, current: ChannelRow = stored, keys = [KEY]) => {
  const outcome = planUpdate(current, { id: 3, ...patch }, keys)
  return isRefusal(outcome) ? outcome.param : undefined
}

Deno.test("ChannelChanges: a base URL must be http or https; none given is no problem", () => {
  strictEqual(urlRefusal(undefined), undefined)
  strictEqual(urlRefusal("https://api.example.com"), undefined)
  strictEqual(urlRefusal("http://10.0.0.1:8080/v1"), undefined)
  strictEqual(urlRefusal("ftp://api.example.com")?.param, "base_url")
  strictEqual(urlRefusal("api.example.com")?.param, "base_url")
})

Deno.test("ChannelChanges: a new channel defaults to the default group, priority 0, weight 1, enabled", () => {
  const fields = newChannelFields({
    name: "n",
    type: "openai",
    base_url: "https://api.example.com",
    keys: [KEY],
    models: ["m"]
  })
  deepStrictEqual(fields, {
    name: "n",
    type: "openai",
    baseUrl: "https://api.example.com",
    models: ["m"],
    groups: ["default"],
    priority: 0,
    weight: 1,
    modelMapping: {},
    settings: {},
    enabled: true
  })
})

Deno.test("ChannelChanges: a header sent back masked keeps its stored value; headers compare in any order", () => {
  deepStrictEqual(mergeHeaders({ a: MASKED, b: "new" }, { a: "old-a" }), { a: "old-a", b: "new" })
  deepStrictEqual(mergeHeaders({ c: MASKED }, undefined), { c: "" })
  strictEqual(mergeHeaders(undefined, { a: "x" }), undefined)
  ok(sameHeaders({ a: "1", b: "2" }, { b: "2", a: "1" }))
  ok(sameHeaders(undefined, {}))
  ok(!sameHeaders({ a: "1" }, { a: "2" }))
  ok(!sameHeaders({ a: "1" }, { a: "1", b: "2" }))
})

Deno.test("ChannelChanges: a patch keeps every field it does not name, and the stored keys", () => {
  const change = planned({ priority: 5, models: ["a", "b"] })
  deepStrictEqual(change.keys, [KEY])
  deepStrictEqual(change.fields, {
    name: "main",
    type: "openai",
    baseUrl: stored.baseUrl,
    models: ["a", "b"],
    groups: ["default"],
    priority: 5,
    weight: 1,
    modelMapping: {},
    settings: stored.settings,
    enabled: true
  })
})

Deno.test("ChannelChanges: the base URL and headers sent back masked are no change", () => {
  const change = planned({
    base_url: "https://…@api.example.com/v1?k=…",
    settings: { headers: { "x-token": MASKED }, auto_disable: false }
  })
  strictEqual(change.fields.baseUrl, stored.baseUrl)
  deepStrictEqual(change.fields.settings, { headers: { "x-token": "header-secret" }, auto_disable: false })
})

Deno.test("ChannelChanges: moving the keys elsewhere needs them (and the headers) given again", () => {
  // A new host or wire format with the stored header values kept: the headers first.
  strictEqual(refusedParam({ base_url: "https://attacker.example" }), "settings.headers")
  strictEqual(refusedParam({ type: "anthropic", settings: { headers: { "x-token": MASKED } } }), "settings.headers")
  // Headers given again, keys not.
  strictEqual(refusedParam({ base_url: "https://attacker.example", settings: { headers: {} } }), "keys")
  // New headers are a move too.
  strictEqual(refusedParam({ settings: { headers: { "x-token": "other" } } }), "keys")
  // Everything given again: allowed.
  const change = planned({ base_url: "https://other.example", settings: { headers: {} }, keys: ["sk-new"] })
  deepStrictEqual(change.keys, ["sk-new"])
  strictEqual(change.fields.baseUrl, "https://other.example")
  // Without stored headers, a new host needs only the keys.
  const bare = { ...stored, settings: {} }
  strictEqual(refusedParam({ base_url: "https://other.example" }, bare), "keys")
  strictEqual(refusedParam({ base_url: "https://other.example", keys: ["sk-new"] }, bare), undefined)
})

Deno.test("ChannelChanges: a channel keeps at least one key", () => {
  strictEqual(refusedParam({ priority: 1 }, stored, []), "keys")
  strictEqual(refusedParam({ keys: [] }), "keys")
})

Deno.test("ChannelChanges: the audit rows show no key, header value or URL credential", () => {
  const input = {
    name: "n",
    type: "openai" as const,
    base_url: "https://user:secret-pass@api.example.com/v1?key=secret-query",
    keys: ["sk-secret-0123456789abcdef"],
    models: ["m"],
    settings: { headers: { "x-token": "secret-header" } }
  }
  for (const audit of [createdAudit(input), updatedAudit({ id: 1, ...input })]) {
    const text = JSON.stringify(audit)
    for (const secret of ["secret-pass", "secret-query", "sk-secret-0123456789abcdef", "secret-header"]) {
      ok(!text.includes(secret), text)
    }
  }
  deepStrictEqual(updatedAudit({ id: 1, priority: 2 }), { id: 1, priority: 2 })
})

Deno.test("maskedKeyRefusal: a key holding the mask is refused by its index; real keys and no keys pass", () => {
  strictEqual(maskedKeyRefusal(undefined), undefined)
  strictEqual(maskedKeyRefusal([KEY, "sk-test-another-key-01"]), undefined)
  deepStrictEqual(maskedKeyRefusal([KEY, KEY, maskKey(KEY)])?.param, "keys[2]")
  deepStrictEqual(maskedKeyRefusal([maskKey("short")])?.param, "keys[0]")
  ok(maskedKeyRefusal([maskKey(KEY)])?.message.startsWith("keys[0] is a masked key"))
  strictEqual(maskKey(KEY).includes(MASKED), true, "every masked key holds the mask")
})

Deno.test("ChannelChanges: a bedrock channel needs settings.region; its default base URL follows the region", () => {
  const input = {
    name: "aws",
    type: "bedrock" as const,
    keys: ["AKIDEXAMPLE|wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"],
    models: ["claude"]
  }
  deepStrictEqual(placed(input), {
    message: "settings.region is missing (a bedrock channel needs its AWS region).",
    param: "settings.region"
  })
  strictEqual(
    (placed({ ...input, settings: { region: "not a region" } }) as { param: string }).param,
    "settings.region"
  )
  const ok = placed({ ...input, settings: { region: "us-west-2" } })
  strictEqual(isRefusal(ok) ? undefined : ok.base_url, "https://bedrock-runtime.us-west-2.amazonaws.com")
  const bedrock: ChannelRow = {
    ...stored,
    type: "bedrock",
    baseUrl: "https://bedrock-runtime.us-west-2.amazonaws.com",
    settings: { region: "us-west-2" }
  }
  strictEqual(refusedParam({ settings: {} }, bedrock), "settings.region")
  // The keys follow the region to AWS's endpoint there (AWS's hosts only), as a vertex channel's follow its location.
  const moved = planUpdate(bedrock, { id: 3, settings: { region: "eu-west-1" } }, [KEY])
  strictEqual(isRefusal(moved) ? undefined : moved.fields.baseUrl, "https://bedrock-runtime.eu-west-1.amazonaws.com")
  const proxied = { ...bedrock, baseUrl: "http://proxy.internal/aws" }
  const kept = planUpdate(proxied, { id: 3, settings: { region: "eu-west-1" } }, [KEY])
  strictEqual(isRefusal(kept) ? undefined : kept.fields.baseUrl, "http://proxy.internal/aws")
})

Deno.test("channel changes: a vertex channel needs settings.project and follows its location on its default endpoint", () => {
  const missing = placed({ name: "vx", type: "vertex", keys: ["sk-test-vertex-key"], models: ["m"] })
  ok(isRefusal(missing))
  strictEqual(missing.param, "settings.project")
  const made = placed({
    name: "vx",
    type: "vertex",
    keys: ["sk-test-vertex-key"],
    models: ["m"],
    settings: { project: "p-1", location: "europe-west4" }
  })
  ok(!isRefusal(made))
  strictEqual(made.base_url, "https://europe-west4-aiplatform.googleapis.com")

  const vertex: ChannelRow = {
    ...stored,
    type: "vertex",
    baseUrl: "https://europe-west4-aiplatform.googleapis.com",
    settings: { project: "p-1", location: "europe-west4" }
  }
  // The default endpoint follows the location; the stored keys may go along (Google's hosts only).
  const moved = planUpdate(vertex, { id: 3, settings: { project: "p-1", location: "global" } }, [KEY])
  ok(!isRefusal(moved), isRefusal(moved) ? moved.message : "")
  strictEqual((moved as PlannedChange).fields.baseUrl, "https://aiplatform.googleapis.com")
  // A base URL of the admin's own stays, whatever the location.
  const proxied = planUpdate(
    { ...vertex, baseUrl: "http://proxy.internal/vertex" },
    { id: 3, settings: { project: "p-1", location: "global" } },
    [KEY]
  )
  strictEqual((proxied as PlannedChange).fields.baseUrl, "http://proxy.internal/vertex")
  const dropped = planUpdate(vertex, { id: 3, settings: { location: "global" } }, [KEY])
  ok(isRefusal(dropped))
  strictEqual(dropped.param, "settings.project")
})
