/**
 * The failure of a call to a vendor's batch API (`VendorBatchApi.ts`): the vendor answered an error status, or its
 * answer was not what its API documents, or it could not be reached. `detail` never carries the channel's key.
 *
 * @since 0.4.0
 */
import { Data } from "effect"

/** A vendor batch call that failed: `status` is the vendor's HTTP status (0: no answer). @category errors */
export class VendorBatchError extends Data.TaggedError("VendorBatchError")<{
  readonly status: number
  readonly detail: string
}> {}
