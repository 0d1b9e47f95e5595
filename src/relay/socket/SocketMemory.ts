/**
 * The turns one Responses socket keeps in memory, so `previous_response_id`
 * continues a response made on the same socket even with `store: false`
 * (OpenAI's WebSocket mode keeps the last response of a connection in memory
 * the same way). Each entry is a response's whole conversation as Responses
 * input items: the input it was sent (already expanded from its own
 * predecessor) followed by its output items. Bounded: at most `maxResponses`
 * entries and `maxBytes` bytes of JSON in all, the oldest forgotten first; an
 * entry larger than `maxBytes` alone is not kept (continuing from it then
 * falls back to the stored responses, as over HTTP).
 *
 * @since 0.1.0
 */

/** The bounds of a socket's memory. @category models */
export interface SocketMemoryBounds {
  /** Responses kept (default 16). */
  readonly maxResponses: number
  /** Bytes of JSON kept across them (default 8 MiB). */
  readonly maxBytes: number
}

/** The default bounds (README, "WebSockets"). @category models */
export const DEFAULT_SOCKET_MEMORY: SocketMemoryBounds = { maxResponses: 16, maxBytes: 8 * 1024 * 1024 }

/**
 * A socket's memory of its last responses.
 *
 * @category constructors
 */
export const makeSocketMemory = (bounds: SocketMemoryBounds) => {
  const entries = new Map<string, { readonly items: ReadonlyArray<unknown>; readonly bytes: number }>()
  let total = 0
  return {
    /** The conversation of response `id` as input items, or `undefined` when it is not (or no longer) kept. */
    load: (id: string): ReadonlyArray<unknown> | undefined => entries.get(id)?.items,
    /** Keeps response `id`'s conversation, forgetting the oldest entries past the bounds. */
    save: (id: string, items: ReadonlyArray<unknown>): void => {
      const bytes = JSON.stringify(items).length
      const previous = entries.get(id)
      if (previous !== undefined) {
        entries.delete(id)
        total -= previous.bytes
      }
      if (bytes > bounds.maxBytes || bounds.maxResponses <= 0) return
      entries.set(id, { items, bytes })
      total += bytes
      for (const [oldest, entry] of entries) {
        if (entries.size <= bounds.maxResponses && total <= bounds.maxBytes) break
        entries.delete(oldest)
        total -= entry.bytes
      }
    },
    /** Entries and bytes kept (for tests and the socket's accounting). */
    size: (): { readonly responses: number; readonly bytes: number } => ({ responses: entries.size, bytes: total })
  }
}

/** A socket's memory (`makeSocketMemory`). @category models */
export type SocketMemory = ReturnType<typeof makeSocketMemory>
