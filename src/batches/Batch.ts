/**
 * A batch as the store keeps it, whichever vendor's API created it: its owner (user, token, and the token's stored
 * key digest its lines are sent with), the inner route each line goes to, its status and times, and the counts of
 * its lines by state. The vendors' views (`formats/batches/`) are made from these.
 *
 * @since 0.4.0
 */

/** The API a batch was created through. @category models */
export type BatchApi = "anthropic" | "openai"

/**
 * A batch's status (OpenAI's words; the Anthropic view maps them to `in_progress`, `canceling`, `ended`):
 * `in_progress` (lines run), `cancelling` (no new line starts, running ones finish), `finalizing` (every line
 * finished, the output being written), and the ends: `completed`, `cancelled`, `expired`, `failed` (the input
 * failed validation, nothing ran).
 *
 * @category models
 */
export type BatchStatus =
  | "validating"
  | "in_progress"
  | "cancelling"
  | "finalizing"
  | "completed"
  | "cancelled"
  | "expired"
  | "failed"

/** A line's state: waiting, claimed by an instance, or one of its four results. @category models */
export type LineState = "pending" | "running" | "succeeded" | "errored" | "canceled" | "expired"

/** How many lines of a batch are in each state. @category models */
export interface LineCounts {
  readonly pending: number
  readonly running: number
  readonly succeeded: number
  readonly errored: number
  readonly canceled: number
  readonly expired: number
}

/** No lines. @category constructors */
export const noLines: LineCounts = { pending: 0, running: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0 }

/** A stored batch. Times are `Date`s (`null`: not yet). @category models */
export interface Batch {
  /** The row id (internal). */
  readonly id: bigint
  /** `msgbatch_…` or `batch_…`. */
  readonly publicId: string
  readonly api: BatchApi
  readonly userId: bigint
  readonly tokenId: bigint
  /** The token's stored key digest (hex SHA-256): the lines are authenticated by it. */
  readonly keyHash: string
  /** The address the batch was created from (a key's IP allow-list is checked against it for every line). */
  readonly clientAddress: string | null
  /** The inner route every line is sent to (`/v1/messages`, `/v1/chat/completions`, …). */
  readonly endpoint: string
  readonly status: BatchStatus
  readonly lineCount: number
  readonly inputFileId: string | null
  readonly outputFileId: string | null
  readonly errorFileId: string | null
  /** The caller's metadata (OpenAI), as given. */
  readonly metadata: unknown
  /** Validation errors (OpenAI's `errors.data`), or `null`. */
  readonly errors: unknown
  readonly createdAt: Date
  readonly inProgressAt: Date | null
  readonly expiresAt: Date
  readonly cancelInitiatedAt: Date | null
  readonly finalizingAt: Date | null
  readonly endedAt: Date | null
  readonly archivedAt: Date | null
}

/** A batch with the counts of its lines. @category models */
export interface BatchView {
  readonly batch: Batch
  readonly counts: LineCounts
}

/** A line claimed to run: its index, its JSON text (`{custom_id, body}`), and how many claims it had. @category models */
export interface ClaimedLine {
  readonly lineIndex: number
  readonly line: string
  /** Claims so far, this one included. */
  readonly attempts: number
  /** Claimed from an instance whose lease ran out: its attempt may have run (`BatchRunner`'s takeover rule). */
  readonly takenOver: boolean
}

/** A finished line as the results read it: its index, JSON text, state, HTTP status and result JSON text. @category models */
export interface FinishedLine {
  readonly lineIndex: number
  readonly line: string
  readonly state: LineState
  readonly statusCode: number | null
  readonly result: string | null
}

/**
 * The request id of a line's attempt, `<batch id>.<line index>`: the usage row of its answer is logged under it,
 * so a batch's rows are those whose request id starts with `<batch id>.`.
 *
 * @category ids
 */
export const lineRequestId = (publicId: string, lineIndex: number): string => `${publicId}.${lineIndex}`
