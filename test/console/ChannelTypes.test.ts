/**
 * The console's channel form offers every channel type the server accepts
 * (`ChannelType` of the bootstrap schema), and the committed bundle carries
 * each as an option value; the settings only one type reads are required and
 * refused by the form as the server requires and refuses them.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict"
import { Schema } from "effect"
import { BUNDLE_FILE } from "../../console/build.ts"
import { CHANNEL_TYPES, TYPE_SETTINGS } from "../../console/src/channelTypes.ts"
import { typeSettingsProblem } from "../../console/src/SettingsFields.tsx"
import { ChannelSettings, ChannelType } from "../../src/config/BootstrapFile.ts"
import { AWS_REGION } from "../../src/domain/ChannelType.ts"

Deno.test("console: the channel form lists every channel type the server accepts, cohere and jina included", async () => {
  deepStrictEqual([...CHANNEL_TYPES].sort(), [...ChannelType.literals].sort())
  const bundle = await Deno.readTextFile(BUNDLE_FILE)
  for (const type of CHANNEL_TYPES) ok(bundle.includes(`"${type}"`), `the bundle offers ${type}`)
})

Deno.test("console: each type's own settings are checked as the server checks them (TYPE_SETTINGS)", () => {
  const samples: Record<string, ReadonlyArray<string>> = {
    api_version: ["2024-10-21", "2025-04-01-preview", "v1", "2024-10", "v2", "2024-10-21-beta", ""],
    region: ["us-east-1", "eu-central-2", "us-gov-west-1", "us-east-1.evil.test", "US-EAST-1", "useast1", ""],
    bedrock_api: ["converse", "invoke", "chat", ""],
    project: ["my-project-1", "123456789", "domain.com:proj", "-lead", "a b", ""],
    location: ["us-central1", "global", "eu", "Europe", "us_central1", ""]
  }
  const server = Schema.decodeUnknownExit(ChannelSettings)
  const checked = new Set<string>()
  for (const [type, settings] of Object.entries(TYPE_SETTINGS)) {
    for (const setting of settings ?? []) {
      checked.add(setting.name)
      for (const value of samples[setting.name]) {
        // Bedrock's region is checked against the AWS pattern by the channel rules, not the schema.
        const serverTakes = setting.name === "region"
          ? AWS_REGION.test(value)
          : server({ [setting.name]: value })._tag === "Success"
        const consoleTakes = typeSettingsProblem(type, { region: "us-east-1", project: "p", [setting.name]: value }) ===
          undefined
        strictEqual(consoleTakes, serverTakes, `${type} ${setting.name} = ${JSON.stringify(value)}`)
      }
    }
  }
  deepStrictEqual([...checked].sort(), Object.keys(samples).sort())
  ok(typeSettingsProblem("vertex", {})?.includes("project"), "vertex needs its project")
  ok(typeSettingsProblem("bedrock", {})?.includes("region"), "bedrock needs its region")
  strictEqual(typeSettingsProblem("openai", { api_version: "nonsense" }), undefined, "only the type's own are checked")
})
