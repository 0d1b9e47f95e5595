/**
 * The error bodies of the video routes (spec "Errors"): the gateway error
 * object for every family on every video route, except the first video
 * family on the OpenAI-style routes, whose variants are
 *
 * - a request error (a missing prompt, any other body rule):
 *   flat `{code: invalid_request, message}`;
 * - an invalid token: `{error: {message, type: invalid_request_error}}`;
 * - no balance: `{error: {message, type: insufficient_quota}}`;
 * - a rate limit: `{error: {message, type: rate_limit_exceeded}}`;
 * - an upstream failure: flat `{code: do_request_failed, message}`.
 *
 * Which envelope a request gets is `videoErrorEnvelope(family, route)`
 * (`formats/videos/VideoFamilies.ts`); a route renders with
 * `respondWith(encodeVideoError(envelope))`.
 *
 * @since 0.1.0
 */
import type { Problem } from "../../domain/Problem.ts"
import { encodeOpenAiError } from "../openai/shared/ErrorBody.ts"

/** The codes of `toProblem` that mean the upstream failed (not the caller, not the gateway itself). */
const UPSTREAM_CODES = new Set(["upstream_error", "bad_response_body", "bad_response", "upstream_timeout"])

/**
 * A problem in the first video family's variants (see the module doc).
 * Statuses are the error table's (the spec does not show them for the flat
 * variants, "Errors" rule 6).
 *
 * @category encoding
 */
export const encodeFirstFamilyError = (problem: Problem): unknown => {
  switch (problem.status) {
    case 401:
      return { error: { message: problem.message, type: "invalid_request_error" } }
    case 402:
      return { error: { message: problem.message, type: "insufficient_quota" } }
    case 429:
      return { error: { message: problem.message, type: "rate_limit_exceeded" } }
    default:
      return UPSTREAM_CODES.has(problem.code)
        ? { code: "do_request_failed", message: problem.message }
        : { code: problem.code, message: problem.message }
  }
}

/**
 * The renderer of a video route's errors for `envelope` (from
 * `videoErrorEnvelope`): `gateway` → `{error: {message, type, param, code}}`,
 * `flat` → the first video family's variants.
 *
 * @category encoding
 */
export const encodeVideoError = (envelope: "gateway" | "flat"): (problem: Problem) => unknown =>
  envelope === "flat" ? encodeFirstFamilyError : encodeOpenAiError
