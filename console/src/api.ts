/// <reference lib="dom" />
/**
 * The console's one way to the back end: `/api/*` with the session cookie
 * (the only credential the page holds) and the CSRF header on every change.
 * Every answer is the api envelope; a failure becomes an `ApiError` whose
 * message is the server's words.
 */
import { COMMON } from "./strings.ts"

/** A failed `/api/*` call: the HTTP status and the server's message. */
export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

/** A page of a listing, as `/api/*` answers it. */
export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly total: number
  readonly page: number
  readonly page_size: number
}

/** Calls `path` with `method` and an optional JSON body; answers `data` or throws an `ApiError`. */
export const api = async <A>(method: string, path: string, body?: unknown): Promise<A> => {
  const headers: Record<string, string> = { accept: "application/json" }
  if (method !== "GET") headers["x-sluice-csrf"] = "1"
  if (body !== undefined) headers["content-type"] = "application/json"
  let response: Response
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin"
    })
  } catch {
    throw new ApiError(0, COMMON.unreachable)
  }
  let parsed: { success?: boolean; message?: string; data?: A; error?: { message?: string } }
  try {
    parsed = await response.json()
  } catch {
    throw new ApiError(response.status, COMMON.unreadable(response.status))
  }
  if (parsed.success === true) return parsed.data as A
  const message = parsed.message ?? parsed.error?.message ?? COMMON.answered(response.status)
  throw new ApiError(response.status, message === "" ? COMMON.answered(response.status) : message)
}

/** The words of any thrown value, for showing next to its cause. */
export const wordsOf = (error: unknown): string => error instanceof Error ? error.message : String(error)
