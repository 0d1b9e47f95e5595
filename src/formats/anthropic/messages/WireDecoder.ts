/**
 * The messages format's names for the shared Schema decoding
 * (`../../shared/WireDecode.ts`): a decoder whose failures name the offending field's
 * path, optionally below a prefix (`tools[2]`).
 *
 * @since 0.1.0
 */
export { invalidAt, makeWireDecoder as wireDecoder } from "../../shared/WireDecode.ts"

/**
 * A path inside a JSON value: object keys and array indexes.
 *
 * @category models
 */
export type WirePath = ReadonlyArray<string | number>
