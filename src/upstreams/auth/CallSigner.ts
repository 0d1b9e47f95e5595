/**
 * Applies a `CallSigning` to a call: the one place every signing kind is dispatched (an exhaustive switch, so a new
 * kind does not compile without its signer).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { UpstreamFailed } from "../../errors/GatewayError.ts"
import { type CallSigning, type SignableCall, signSigV4 } from "./CallSigning.ts"
import { makeGoogleTokens, type TokenSend } from "./GoogleToken.ts"

/**
 * Signs calls: the headers to send for `call` under `signing` (the call's own headers and those the signing adds).
 * Fails with `UpstreamFailed` (`unauthorized`) when the key cannot sign or obtain a token.
 *
 * @category models
 */
export type CallSigner = (
  signing: CallSigning,
  call: SignableCall
) => Effect.Effect<Record<string, string>, UpstreamFailed>

/**
 * The gateway's signer. `send` is the upstream client's unsigned call, through which tokens are fetched (Google's
 * token endpoint); the signer holds the token cache, so one signer serves one client.
 *
 * @category signing
 */
export const makeCallSigner = (send: TokenSend): CallSigner => {
  const googleTokens = makeGoogleTokens(send)
  return (signing, call) => {
    switch (signing._tag) {
      case "SigV4":
        return signSigV4(signing, call)
      case "GoogleOAuth":
        return Effect.map(
          googleTokens.tokenFor(signing.serviceAccount),
          (token) => ({ ...call.headers, authorization: `Bearer ${token}` })
        )
    }
  }
}
