/**
 * The console's channel form offers every channel type the server accepts
 * (`ChannelType` of the bootstrap schema), and the committed bundle carries
 * each as an option value.
 */
import { deepStrictEqual, ok } from "node:assert/strict"
import { BUNDLE_FILE } from "../../console/build.ts"
import { CHANNEL_TYPES } from "../../console/src/channelTypes.ts"
import { ChannelType } from "../../src/config/BootstrapFile.ts"

Deno.test("console: the channel form lists every channel type the server accepts, cohere and jina included", async () => {
  deepStrictEqual([...CHANNEL_TYPES].sort(), [...ChannelType.literals].sort())
  const bundle = await Deno.readTextFile(BUNDLE_FILE)
  for (const type of CHANNEL_TYPES) ok(bundle.includes(`"${type}"`), `the bundle offers ${type}`)
})
