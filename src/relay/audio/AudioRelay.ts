/**
 * The relay of the audio and moderation routes: one service that hands each
 * checked request to its operation's relay, all on the one-answer billed
 * sequence (limits → hold → `Failover` → settlement) with an attempt per
 * operation, on the channel types `upstreams/AudioAdapter.ts` lists for it:
 *
 * - speech: `SpeechRelay.ts` (streamed on as it arrives; `per_1m_characters`
 *   or token prices);
 * - transcription and translation: `TranscriptionRelay.ts` (`per_second` or
 *   token prices);
 * - moderations: `ModerationRelay.ts` (free unless priced).
 *
 * What they share is in `AudioShared.ts`. A failed call costs nothing.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import type { HttpServerResponse } from "effect/http"
import type { GatewayError } from "../../errors/GatewayError.ts"
import { audioServices } from "./AudioShared.ts"
import { makeModerationRelay, type ModerationInput } from "./ModerationRelay.ts"
import { makeSpeechRelay, type SpeechInput } from "./SpeechRelay.ts"
import { makeTranscriptionRelay, type TranscriptionInput } from "./TranscriptionRelay.ts"

export type { ModerationInput } from "./ModerationRelay.ts"
export type { SpeechInput } from "./SpeechRelay.ts"
export type { TranscriptionInput } from "./TranscriptionRelay.ts"

/** What an audio route hands the relay. @category models */
export type AudioRelayInput = SpeechInput | TranscriptionInput | ModerationInput

/** @category services */
export class AudioRelay extends Context.Service<AudioRelay, {
  /**
   * Runs `input` on the first candidate that serves its operation. Fails
   * with `ModelNotFound` when no candidate serves it, `ModelNotPriced` when
   * the model has no price this operation bills by (speech:
   * `per_1m_characters` or token prices; transcription: `per_second` or token prices;
   * moderations are free unless priced), and the relay's usual quota,
   * rate-limit and upstream failures.
   */
  readonly run: (input: AudioRelayInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError>
}>()("sluice/relay/audio/AudioRelay") {
  /** Needs the one-shot services, `UpstreamClient`, `GatewaySettings` and `Catalog`. */
  static readonly layer = Layer.effect(
    AudioRelay,
    Effect.gen(function* () {
      const deps = yield* audioServices
      const speech = makeSpeechRelay(deps)
      const transcription = makeTranscriptionRelay(deps)
      const moderation = makeModerationRelay(deps)

      const run = (input: AudioRelayInput): Effect.Effect<HttpServerResponse.HttpServerResponse, GatewayError> => {
        switch (input.operation) {
          case "speech":
            return speech(input)
          case "transcriptions":
          case "translations":
            return transcription(input)
          case "moderations":
            return moderation(input)
        }
      }

      return AudioRelay.of({ run })
    })
  )
}
