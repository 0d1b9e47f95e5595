/**
 * Pagination of `/api/*` listings: 1-based pages of at most `MAX_PAGE_SIZE`
 * rows.
 *
 * @since 0.1.0
 */

/** One page of a listing: 1-based `page`, `total` rows in all. @category models */
export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly total: number
  readonly page: number
  readonly page_size: number
}

/** Which page of a listing to read: 1-based, `size` rows. @category models */
export interface PageRequest {
  readonly page: number
  readonly size: number
}

/** The page size when none is asked for. @category constants */
export const DEFAULT_PAGE_SIZE = 20

/** The largest page size served. @category constants */
export const MAX_PAGE_SIZE = 100

/** The row offset of a page. @category paging */
export const offsetOf = (page: PageRequest): number => (page.page - 1) * page.size

/** Epoch seconds of a stored timestamp (`null` stays `null`). @category paging */
export const epochSeconds = (value: Date | string | null): number | null =>
  value === null ? null : Math.floor(new Date(value).getTime() / 1000)
