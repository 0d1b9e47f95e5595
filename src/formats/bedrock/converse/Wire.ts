/**
 * Bedrock's Converse API as an outbound-only wire (`POST /model/{modelId}/converse`, `/converse-stream`;
 * docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html, API_runtime_ConverseStream.html): no
 * caller speaks it, so a request reaches it translated from the canonical form, never passed through. Its stream is
 * event-stream framed (`framing: "aws-event-stream"`).
 *
 * @since 0.1.0
 */
import type { OutboundOnlyWire } from "../../Format.ts"
import { classifyBedrockError } from "../ErrorBody.ts"
import { encodeConverseRequest } from "./RequestEncoder.ts"
import { decodeConverseResponse } from "./ResponseDecoder.ts"
import { converseStreamDecoder, type ConverseStreamState } from "./StreamDecoder.ts"

/**
 * The Converse wire.
 *
 * @category formats
 */
export const ConverseWire: OutboundOnlyWire<ConverseStreamState> = {
  name: "bedrock-converse",
  framing: "aws-event-stream",
  encodeRequest: encodeConverseRequest,
  decodeResponse: decodeConverseResponse,
  streamDecoder: converseStreamDecoder,
  classifyError: classifyBedrockError,
  // Converse takes documents as bytes only (`DocumentSource.bytes`; an S3 location is not a URL a caller sends).
  inlinesFiles: () => true
}
