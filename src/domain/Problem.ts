/**
 * A failure ready to be rendered: the one shape every error envelope and every
 * format's error body is made from.
 *
 * @since 0.1.0
 */

/**
 * A problem ready to be rendered in a format's own error shape (HTTP status,
 * the spec's `type` and `code` ("Errors" part), a message safe for the caller,
 * `param` naming the offending field or empty).
 *
 * @category models
 */
export interface Problem {
  readonly status: number
  readonly type: string
  readonly code: string
  readonly message: string
  readonly param: string
}
