/**
 * The console's keys field (`console/src/channelTypes.ts` `keysOf`): one key a line, but on a vertex channel a
 * service-account key JSON pasted over many lines is one key (sent compact), beside API keys on their own lines.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { keysOf, vertexBaseUrl } from "../../console/src/channelTypes.ts"

const keyFile = `{
  "type": "service_account",
  "project_id": "sluice-test-project",
  "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIE{not}really\\"a key\\n-----END PRIVATE KEY-----\\n",
  "client_email": "sa@sluice-test-project.iam.gserviceaccount.com",
  "token_uri": "https://oauth2.googleapis.com/token"
}`

Deno.test("console keys: lines on most types; on vertex a key file over many lines is one key", () => {
  deepStrictEqual(keysOf("openai", " sk-test-1 \n\nsk-test-2\n"), ["sk-test-1", "sk-test-2"])
  const keys = keysOf("vertex", `sk-test-vertex-api-key\n${keyFile}\n  ${keyFile}`)
  strictEqual(Array.isArray(keys), true)
  const [apiKey, first, second] = keys as Array<string>
  strictEqual(apiKey, "sk-test-vertex-api-key")
  deepStrictEqual(JSON.parse(first), JSON.parse(keyFile))
  strictEqual(first.includes("\n"), false, "sent compact")
  strictEqual(second, first)
  strictEqual(typeof keysOf("vertex", `{"type": "service_account"`), "string", "an unclosed object is refused")
  strictEqual(typeof keysOf("vertex", `{"type": service_account}`), "string", "invalid JSON is refused")
})

Deno.test("console keys: the vertex base URL placeholder follows the location as the server's default does", () => {
  strictEqual(vertexBaseUrl("europe-west4"), "https://europe-west4-aiplatform.googleapis.com")
  strictEqual(vertexBaseUrl("global"), "https://aiplatform.googleapis.com")
  strictEqual(vertexBaseUrl("eu"), "https://aiplatform.eu.rep.googleapis.com")
})
