/**
 * OpenAI's speech request on the upstream (`POST /v1/audio/speech`,
 * platform.openai.com/docs/api-reference/audio/createSpeech): the caller's
 * JSON body passed on with the upstream's model, the channel's
 * `strip_params` removed; the answer (audio bytes, or `speech.audio.*` SSE
 * events) is streamed on as it arrives.
 *
 * @since 0.1.0
 */

/**
 * The upstream body of a speech request: `body` with `model` set to `model` and each of `strip` removed.
 *
 * @category encoding
 */
export const openAiSpeechBody = (
  body: Readonly<Record<string, unknown>>,
  model: string,
  strip: ReadonlyArray<string>
): Record<string, unknown> => {
  const sent: Record<string, unknown> = { ...body, model }
  for (const param of strip) delete sent[param]
  return sent
}
