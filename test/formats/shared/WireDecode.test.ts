/**
 * What a caller reads when `Schema` rejects a field: missing fields named as
 * missing, unions of tagged objects spelled out (and pointed at their tag
 * field), literal unions as a list, and errors re-based onto the caller's body.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Result, Schema } from "effect"
import { InvalidRequest } from "../../../src/errors/GatewayError.ts"
import { plainExpectation } from "../../../src/domain/SchemaDecode.ts"
import { makeWireDecoder, rebase } from "../../../src/formats/shared/WireDecode.ts"

const Part = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("image_url"), image_url: Schema.Struct({ url: Schema.String }) })
])
const Body = Schema.Struct({
  role: Schema.Literals(["user", "assistant"]),
  content: Schema.Array(Part),
  choice: Schema.optional(Schema.Union([Schema.Literals(["auto", "none"]), Part]))
})
const decode = makeWireDecoder(Body)

const errorOf = (input: unknown, prefix?: ReadonlyArray<PropertyKey>) => {
  const decoded = decode(input, prefix)
  if (Result.isSuccess(decoded)) throw new Error("expected a failure")
  return { message: decoded.failure.message, param: decoded.failure.param }
}

Deno.test("schema decode: a missing field is named as missing", () => {
  deepStrictEqual(errorOf({ role: "user" }), { message: "content is missing.", param: "content" })
  deepStrictEqual(errorOf({ role: "user", content: [{ type: "text" }] }, ["messages", 2]), {
    message: "messages[2].content[0].text is missing.",
    param: "messages[2].content[0].text"
  })
})

Deno.test("schema decode: an object matching no tagged member is pointed at its tag", () => {
  deepStrictEqual(errorOf({ role: "user", content: [{ type: "video" }] }), {
    message: 'Invalid content[0].type: Expected "text" or "image_url"',
    param: "content[0].type"
  })
  deepStrictEqual(errorOf({ role: "user", content: [{ text: "hi" }] }), {
    message: "content[0].type is missing.",
    param: "content[0].type"
  })
  deepStrictEqual(errorOf({ role: "user", content: [5] }), {
    message: 'Invalid content[0]: Expected an object whose type is "text" or "image_url"',
    param: "content[0]"
  })
  deepStrictEqual(errorOf({ role: "user", content: [], choice: 7 }), {
    message: 'Invalid choice: Expected "auto", "none", or an object whose type is "text" or "image_url"',
    param: "choice"
  })
})

Deno.test("schema decode: a literal union reads as a list", () => {
  deepStrictEqual(errorOf({ role: "robot", content: [] }), {
    message: 'Invalid role: Expected "user" or "assistant"',
    param: "role"
  })
  deepStrictEqual(plainExpectation('Expected "a" | "b" | null | undefined'), { message: 'Expected "a", "b" or null' })
  deepStrictEqual(plainExpectation("Expected string | undefined"), { message: "Expected string | undefined" })
  deepStrictEqual(plainExpectation("Missing key"), { message: "Missing key" })
})

Deno.test("schema decode: errors re-based onto the caller's body", () => {
  const at = (message: string, param: string) => {
    const rebased = rebase(new InvalidRequest({ message, param }), "messages[1]")
    return { message: rebased.message, param: rebased.param }
  }
  deepStrictEqual(at("Invalid content[0].type: Expected x", "content[0].type"), {
    message: "Invalid messages[1].content[0].type: Expected x",
    param: "messages[1].content[0].type"
  })
  deepStrictEqual(at("id is missing.", "id"), { message: "messages[1].id is missing.", param: "messages[1].id" })
  deepStrictEqual(at("Expected an object", ""), {
    message: "Invalid messages[1]: Expected an object",
    param: "messages[1]"
  })
  deepStrictEqual(at("Send one prompt.", "[0]"), { message: "Send one prompt.", param: "messages[1][0]" })
  strictEqual(rebase(new InvalidRequest({ message: "m", param: "p" }), "").param, "p")
})
