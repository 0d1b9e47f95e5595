/**
 * Counting tokens of text the gateway delivered, for the one bill that is an
 * estimate: a stream cut before its final usage (docs/ARCHITECTURE.md, "Billing truth").
 * Where the vendor's tokenizer is public — OpenAI's `o200k_base` (GPT-4o,
 * GPT-4.1, GPT-5, o-series) and `cl100k_base` (GPT-4, GPT-3.5), through the
 * `gpt-tokenizer` package (github.com/openai/tiktoken encodings) — text is
 * counted with it; elsewhere (Anthropic's and Google's tokenizers are not
 * published) a token is taken as four characters.
 *
 * The encodings load on first use (about 60 MB and 0.3 s once per process),
 * never on the path of an answer that reported its usage.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"

/** The most characters counted with a tokenizer; the rest of a longer text is counted at four a token. */
export const TOKENIZED_CHARACTERS = 262_144

/** Which public tokenizer counts text for `model` on a channel of `channelType`; `undefined`: none. */
export const encodingFor = (channelType: string, model: string): "o200k_base" | "cl100k_base" | undefined => {
  if (channelType !== "openai") return undefined
  const name = model.toLowerCase()
  if (/^(gpt-4(-|$)|gpt-4-turbo|gpt-3\.5|text-embedding-(ada|3)|davinci|babbage)/.test(name)) return "cl100k_base"
  return "o200k_base"
}

type Counter = (text: string) => number
const loaded = new Map<string, Promise<Counter>>()

const counterOf = (encoding: "o200k_base" | "cl100k_base"): Promise<Counter> => {
  let counter = loaded.get(encoding)
  if (counter === undefined) {
    counter = (encoding === "o200k_base"
      ? import("gpt-tokenizer/encoding/o200k_base")
      : import("gpt-tokenizer/encoding/cl100k_base")).then((module) =>
        module.countTokens
      )
    loaded.set(encoding, counter)
  }
  return counter
}

/** Tokens in `characters` characters of text with no tokenizer: four characters a token, rounded up. */
export const charactersToTokens = (characters: number): number => Math.ceil(characters / 4)

/**
 * The tokens of `texts` (the pieces delivered, in order; `characters` their
 * total length, which may exceed what `texts` kept), for `model` on a channel
 * of `channelType`: counted with the vendor's tokenizer where it is public (at
 * most `TOKENIZED_CHARACTERS` of it; the rest at four characters a token),
 * else four characters a token. Never fails: a tokenizer that cannot load
 * falls back to the character count.
 *
 * @category token count
 */
export const countTokens = (
  channelType: string,
  model: string,
  texts: ReadonlyArray<string>,
  characters: number
): Effect.Effect<number> => {
  const encoding = encodingFor(channelType, model)
  if (encoding === undefined || characters === 0) return Effect.succeed(charactersToTokens(characters))
  return Effect.promise(() =>
    counterOf(encoding).then((count) => {
      const text = texts.join("").slice(0, TOKENIZED_CHARACTERS)
      return count(text) + charactersToTokens(Math.max(0, characters - text.length))
    }).catch(() => charactersToTokens(characters))
  )
}
