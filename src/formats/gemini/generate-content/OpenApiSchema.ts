/**
 * Converts the OpenAPI-3.0-style `Schema` object of the generate-content format
 * (`responseSchema`, `functionDeclarations[].parameters`: upper-case `type`,
 * `nullable`, int64 limits written as strings) into a JSON Schema object, the
 * canonical representation of tool parameters and output schemas.
 *
 * Source: @google/genai 3.1.0 `Schema` and `Type` (genai.d.ts); ai.google.dev
 * API reference, "Schema".
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"

const integerKeywords = new Set(["minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"])

const convertType = (value: unknown): unknown => {
  if (typeof value !== "string") return value
  const lower = value.toLowerCase()
  return lower === "type_unspecified" ? undefined : lower
}

const convertValue = (key: string, value: unknown): unknown => {
  switch (key) {
    case "type":
      return convertType(value)
    case "properties":
      return Predicate.isReadonlyObject(value)
        ? Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, openApiToJsonSchema(schema)]))
        : value
    case "items":
      return openApiToJsonSchema(value)
    case "anyOf":
      return Array.isArray(value) ? value.map(openApiToJsonSchema) : value
    default: {
      if (integerKeywords.has(key) && typeof value === "string" && /^\d+$/.test(value)) return Number(value)
      return value
    }
  }
}

/**
 * One OpenAPI-style schema → JSON Schema: `type: "STRING"` → `"string"`;
 * `nullable: true` → `type: [<type>, "null"]`; `example` → `examples: [example]`;
 * string-valued int64 limits (`minItems: "1"`) → numbers; nested `properties`,
 * `items` and `anyOf` converted recursively; every other keyword (`format`,
 * `enum`, `required`, `propertyOrdering`, …) kept as is. A value that is not an
 * object is returned unchanged. Never throws. Recursive: as deep as `schema`,
 * which comes from a body whose nesting was bounded before it was parsed
 * (`MAX_JSON_DEPTH`, domain/JsonDepth.ts).
 *
 * @category decoding
 */
export const openApiToJsonSchema = (schema: unknown): unknown => {
  if (!Predicate.isReadonlyObject(schema)) return schema
  const entries: Array<readonly [string, unknown]> = []
  for (const [key, value] of Object.entries(schema)) {
    if (key === "nullable" || key === "example") continue
    const converted = convertValue(key, value)
    if (converted !== undefined) entries.push([key, converted])
  }
  const out: Record<string, unknown> = Object.fromEntries(entries)
  if (schema.nullable === true) {
    const type = out.type
    if (typeof type === "string") out.type = [type, "null"]
    else if (Array.isArray(type) && !type.includes("null")) out.type = [...type, "null"]
  }
  if (schema.example !== undefined) out.examples = [schema.example]
  return out
}

/**
 * Like `openApiToJsonSchema`, for places where the canonical form needs an
 * object (tool parameters, output schemas): a non-object input gives `{}`.
 *
 * @category decoding
 */
export const openApiToJsonSchemaObject = (schema: unknown): Readonly<Record<string, unknown>> => {
  const converted = openApiToJsonSchema(schema)
  return Predicate.isReadonlyObject(converted) ? converted : {}
}
