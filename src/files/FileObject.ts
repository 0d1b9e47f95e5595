/**
 * OpenAI's File object and its list, as `/v1/files` answers them (OpenAI API reference, "Files": "The File object",
 * "List files"; the `openai` SDK's `FileObject`, `FileDeleted` and `CursorPage`), and the shape of a file id.
 *
 * @since 0.3.0
 */

/**
 * The purposes a caller may upload a file for (`POST /v1/files`, `purpose`): OpenAI's, without `fine-tune`
 * (the gateway runs no fine-tuning).
 *
 * @category constants
 */
export const UPLOAD_PURPOSES = ["assistants", "batch", "user_data", "vision", "evals"] as const

/** A purpose a caller uploads for (`UPLOAD_PURPOSES`). @category models */
export type UploadPurpose = typeof UPLOAD_PURPOSES[number]

/**
 * A stored file's purpose: one a caller uploads for, or `batch_output`, which the gateway gives the output and
 * error files of a batch it ran (as OpenAI does).
 *
 * @category models
 */
export type FilePurpose = UploadPurpose | "batch_output"

/** Whether `value` is a purpose a caller may upload for. @category guards */
export const isUploadPurpose = (value: string): value is UploadPurpose =>
  (UPLOAD_PURPOSES as ReadonlyArray<string>).includes(value)

/** Whether `value` is a purpose a stored file may have (`FilePurpose`). @category guards */
export const isFilePurpose = (value: string): value is FilePurpose => value === "batch_output" || isUploadPurpose(value)

/**
 * OpenAI's File object: `bytes` the size, `created_at` and `expires_at` Unix seconds (`expires_at` null: the file
 * never expires), `status` always `processed` (a file is visible only once all of it is stored).
 *
 * @category models
 */
export interface FileObject {
  readonly id: string
  readonly object: "file"
  readonly bytes: number
  readonly created_at: number
  readonly expires_at: number | null
  readonly filename: string
  readonly purpose: FilePurpose
  readonly status: "processed"
}

/**
 * A page of `GET /v1/files` in OpenAI's list shape: `first_id` and `last_id` the ids at either end of `data` (null
 * when it is empty), `has_more` whether the next page (`after: last_id`) holds any file.
 *
 * @category models
 */
export interface FileList {
  readonly object: "list"
  readonly data: ReadonlyArray<FileObject>
  readonly first_id: string | null
  readonly last_id: string | null
  readonly has_more: boolean
}

/** What `DELETE /v1/files/{file_id}` answers (OpenAI's `FileDeleted`). @category models */
export interface FileDeleted {
  readonly id: string
  readonly object: "file"
  readonly deleted: true
}

/** The alphabet of file ids: lowercase letters and digits, whose `C`-collation order is their code order. */
const ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"

/** Characters of an id's time part (milliseconds in base 36; nine digits last until the year 5188). */
const TIME_DIGITS = 9

/** Characters of an id's random part (36^15 ≈ 2^77). */
const RANDOM_DIGITS = 15

/**
 * A new file id, `file-` and 24 characters of `[0-9a-z]`: the creation time in milliseconds (`nowMillis`, base 36,
 * 9 digits), then 15 random ones (`crypto`, unpredictable). Ids sort as their files were created, so the list's
 * cursor is the id itself and survives the deletion of the file it names.
 *
 * @category constructors
 */
export const newFileId = (nowMillis: number): string => {
  const time = Math.max(0, Math.floor(nowMillis)).toString(36).padStart(TIME_DIGITS, "0").slice(-TIME_DIGITS)
  let random = ""
  while (random.length < RANDOM_DIGITS) {
    for (const byte of crypto.getRandomValues(new Uint8Array(RANDOM_DIGITS * 2))) {
      // 252 = 7 × 36: bytes at or above it are dropped so that every character is equally likely.
      if (byte < 252 && random.length < RANDOM_DIGITS) random += ID_ALPHABET[byte % 36]
    }
  }
  return `file-${time}${random}`
}

/** Whether `id` has the shape of a file id (`newFileId`): checked before it reaches the store. @category guards */
export const isFileId = (id: string): boolean => /^file-[0-9a-z]{24}$/.test(id)

/**
 * `id` as an error message may quote it: unchanged when it has a file id's shape, else its first 64 characters with
 * every one outside `[A-Za-z0-9_-]` shown as `?` (a caller's path segment may hold anything).
 *
 * @category constructors
 */
export const quotableFileId = (id: string): string =>
  isFileId(id) ? id : `${id.slice(0, 64).replace(/[^A-Za-z0-9_-]/g, "?")}${id.length > 64 ? "…" : ""}`
