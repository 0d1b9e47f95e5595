/**
 * The decisions of an OAuth login over plain values: a provider's public
 * parameters for a front end that builds the authorization URL itself, the
 * checks of a callback's state (present, taken from this browser), which user
 * an identity signs in as (and whether it is linked now), and when an
 * identity may be unlinked (never the user's only way to sign in).
 *
 * @since 0.1.0
 */
import { type ProviderSpec, redirectUri, scopeOf } from "./OAuthProviders.ts"

/** A provider's public parameters (see `OAuth.clients`). @category models */
export interface OAuthClient {
  readonly name: string
  readonly type: "oidc" | "github"
  readonly client_id: string
  readonly authorization_endpoint: string | null
  readonly scope: string
  readonly redirect_uri: string
}

/**
 * The public parameters of provider `name`: its authorization `endpoint`
 * (`null` when its discovery cannot be read now), space-separated scopes and
 * the callback under `redirectBase`. No secret.
 */
export const publicClient = (
  name: string,
  spec: ProviderSpec,
  endpoint: string | null,
  redirectBase: string
): OAuthClient => ({
  name,
  type: spec.type,
  client_id: spec.client_id,
  authorization_endpoint: endpoint,
  scope: scopeOf(spec),
  redirect_uri: redirectUri(redirectBase, name)
})

/** Why a callback's `state` parameter cannot be one the gateway issued (empty, or over 128 characters). */
export const stateRefusal = (state: string): string | undefined =>
  state === "" || state.length > 128 ? "The sign-in state is missing." : undefined

/**
 * The taken state when it completes this callback, else why not: there was
 * none (unknown, used or expired), or it was issued to another browser than
 * the one whose digest is `browserDigest`.
 */
export const takenState = <State extends { readonly browser: string }>(
  taken: State | undefined,
  browserDigest: string
): State | string =>
  taken === undefined
    ? "The sign-in state is unknown, used or expired."
    : taken.browser !== browserDigest
    ? "The sign-in was started in another browser."
    : taken

/**
 * Which user an identity signs in as: refused; the logged-in user asking, to
 * whom the identity is linked now (`link`); or the user it is bound to
 * (`signIn`; `undefined`: none yet, an account may be opened).
 *
 * @category models
 */
export type LinkPlan =
  | { readonly _tag: "refused"; readonly message: string }
  | { readonly _tag: "link"; readonly userId: bigint }
  | { readonly _tag: "signIn"; readonly userId: bigint | undefined }

/**
 * The plan for an identity of `provider` now linked to `bound` (if any), in a
 * login that `linking` (a logged-in user asking to link it; `null`: a plain
 * sign-in) started. A link to another user than the one asking is refused.
 */
export const linkPlan = (provider: string, bound: bigint | undefined, linking: bigint | null): LinkPlan => {
  if (linking === null || bound === linking) return { _tag: "signIn", userId: bound }
  if (bound !== undefined) {
    return { _tag: "refused", message: `This ${provider} account is already linked to another user.` }
  }
  return { _tag: "link", userId: linking }
}

/** What a link that could not be written (the user has another identity of `provider`) answers. */
export const linkTakenMessage = (provider: string): string =>
  `Your account is already linked to another ${provider} account.`

/**
 * Why the caller may not unlink a provider: it has no identity of it
 * (`signIns` `undefined`: no such user), or it is the caller's only way to
 * sign in (no password and no other identity).
 */
export const unlinkRefusal = (
  signIns: { readonly hasPassword: boolean; readonly links: number } | undefined,
  linked: boolean
): string | undefined =>
  signIns === undefined || !linked
    ? "Your account is not linked to this provider."
    : !signIns.hasPassword && signIns.links <= 1
    ? "This is your only way to sign in; set a password before unlinking it."
    : undefined
