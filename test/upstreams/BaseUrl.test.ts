/**
 * The base URL rule (`src/upstreams/BaseUrl.ts`) on every channel type and
 * every modality adapter: a `base_url` with a path prefix keeps it, with or
 * without a trailing slash and with or without the version the call's path
 * starts with (not doubled), a bare host gets the path, and a query in the
 * base URL stays after the call's own. The table is keyed by channel type, so
 * a new type does not compile until its URLs are listed here.
 */
import { strictEqual } from "node:assert/strict"
import fc from "fast-check"
import { baseUrlOf, type ChannelType } from "../../src/domain/ChannelType.ts"
import { countTokensUrl, messagesCountUrl } from "../../src/relay/text/CountTokensRelay.ts"
import { adapters, type Channel } from "../../src/upstreams/Adapter.ts"
import { audioAdapters } from "../../src/upstreams/AudioAdapter.ts"
import { upstreamUrl } from "../../src/upstreams/BaseUrl.ts"
import { embeddingAdapters } from "../../src/upstreams/EmbeddingAdapter.ts"
import { imageAdapters } from "../../src/upstreams/ImageAdapter.ts"
import { midjourneyAdapters } from "../../src/upstreams/MidjourneyAdapter.ts"
import { rerankAdapters } from "../../src/upstreams/RerankAdapter.ts"
import { videoAdapters } from "../../src/upstreams/VideoAdapter.ts"

const KEY = "sk-test-base-url-0001"
const MODEL = "m-1"
const VERTEX_PLACE = "/v1/projects/p-1/locations/europe-west4"

/** One call of a channel type: its label, its path from the vendor's root, and the URL an adapter makes for it. */
type Call = readonly [label: string, path: string, url: (channel: Channel) => string]

interface TypeCase {
  /** Version suffixes a base URL of the type may end in, each removed before the path. */
  readonly versions: ReadonlyArray<string>
  readonly calls: ReadonlyArray<Call>
  /** The proxy path prefix the cases use (default `/openai`; one that is not a suffix of the type's own). */
  readonly prefix?: string
}

const text = (type: ChannelType, wire: Parameters<typeof adapters.openai.target>[2], stream = false) =>
(
  channel: Channel
) => adapters[type].target(channel, KEY, wire, MODEL, stream).url

const video = (type: ChannelType, path: string) => (channel: Channel) =>
  videoAdapters[type]!.target(channel, KEY, { method: "GET", path }, true).url

const CASES: Record<ChannelType, TypeCase> = {
  openai: {
    versions: ["/v1"],
    calls: [
      ["chat", "/v1/chat/completions", text("openai", "openai-chat")],
      ["responses", "/v1/responses", text("openai", "openai-responses")],
      [
        "responses socket",
        "/v1/responses",
        (channel) =>
          adapters.openai.socketTarget!(
            { ...channel, settings: { ...channel.settings, responses_websocket: true } },
            KEY,
            "openai-responses"
          )!.url
      ],
      ["completions", "/v1/completions", text("openai", "completions")],
      ["embeddings", "/v1/embeddings", (channel) => embeddingAdapters.openai!.target(channel, KEY, MODEL).url],
      [
        "image generation",
        "/v1/images/generations",
        (channel) => imageAdapters.openai!.target(channel, KEY, MODEL, false, false).url
      ],
      [
        "image edit",
        "/v1/images/edits",
        (channel) => imageAdapters.openai!.target(channel, KEY, MODEL, true, true).url
      ],
      ["speech", "/v1/audio/speech", (channel) => audioAdapters.openai!.target(channel, KEY, "speech", MODEL).url],
      [
        "transcription",
        "/v1/audio/transcriptions",
        (channel) => audioAdapters.openai!.target(channel, KEY, "transcriptions", MODEL).url
      ],
      [
        "moderation",
        "/v1/moderations",
        (channel) => audioAdapters.openai!.target(channel, KEY, "moderations", MODEL).url
      ],
      ["video poll", "/v1/videos/video_1", video("openai", "/v1/videos/video_1")]
    ]
  },
  anthropic: {
    versions: ["/v1"],
    calls: [
      ["messages", "/v1/messages", text("anthropic", "anthropic")],
      [
        "count tokens",
        "/v1/messages/count_tokens",
        (channel) => messagesCountUrl(text("anthropic", "anthropic")(channel))
      ]
    ]
  },
  gemini: {
    versions: ["/v1beta", "/v1"],
    calls: [
      ["generate", `/v1beta/models/${MODEL}:generateContent`, text("gemini", "gemini")],
      ["stream", `/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`, text("gemini", "gemini", true)],
      [
        "embeddings",
        `/v1beta/models/${MODEL}:batchEmbedContents`,
        (channel) => embeddingAdapters.gemini!.target(channel, KEY, MODEL).url
      ],
      [
        "count tokens",
        `/v1beta/models/${MODEL}:countTokens`,
        (channel) => countTokensUrl(text("gemini", "gemini")(channel))
      ],
      [
        "image",
        `/v1beta/models/${MODEL}:generateContent`,
        (channel) => imageAdapters.gemini!.target(channel, KEY, MODEL, false, false).url
      ],
      [
        "speech",
        `/v1beta/models/${MODEL}:generateContent`,
        (channel) => audioAdapters.gemini!.target(channel, KEY, "speech", MODEL).url
      ],
      [
        "video",
        `/v1beta/models/${MODEL}:predictLongRunning`,
        video("gemini", `/v1beta/models/${MODEL}:predictLongRunning`)
      ]
    ]
  },
  ark: {
    versions: ["/api/v3"],
    calls: [
      ["chat", "/api/v3/chat/completions", text("ark", "openai-chat")],
      [
        "images",
        "/api/v3/images/generations",
        (channel) => imageAdapters.ark!.target(channel, KEY, MODEL, false, false).url
      ],
      ["video", "/api/v3/contents/generations/tasks", video("ark", "/api/v3/contents/generations/tasks")]
    ]
  },
  cohere: {
    versions: ["/v2", "/v1", "/compatibility/v1"],
    calls: [
      ["chat", "/compatibility/v1/chat/completions", text("cohere", "openai-chat")],
      ["rerank", "/v2/rerank", (channel) => rerankAdapters.cohere!.target(channel, KEY).url]
    ]
  },
  jina: {
    versions: ["/v1"],
    calls: [
      ["chat", "/v1/chat/completions", text("jina", "openai-chat")],
      ["rerank", "/v1/rerank", (channel) => rerankAdapters.jina!.target(channel, KEY).url]
    ]
  },
  midjourney: {
    versions: ["/mj"],
    calls: [
      [
        "imagine",
        "/mj/submit/imagine",
        (channel) => midjourneyAdapters.midjourney!.target(channel, KEY, "/mj/submit/imagine", true).url
      ],
      [
        "task",
        "/mj/task/t-1/fetch",
        (channel) => midjourneyAdapters.midjourney!.target(channel, KEY, "/mj/task/t-1/fetch", false).url
      ],
      ["chat", "/v1/chat/completions", text("midjourney", "openai-chat")]
    ]
  },
  kling: {
    versions: ["/v1"],
    calls: [
      ["chat", "/v1/chat/completions", text("kling", "openai-chat")],
      ["video", "/v1/videos/text2video", video("kling", "/v1/videos/text2video")],
      [
        "probe",
        "/v1/videos/text2video?pageNum=1&pageSize=1",
        (channel) => videoAdapters.kling!.target(channel, KEY, videoAdapters.kling!.probe!, true).url
      ]
    ]
  },
  deepseek: {
    // DeepSeek takes `/v1` with no meaning, and `/beta` is its beta base URL (api-docs.deepseek.com).
    versions: ["/v1", "/beta"],
    calls: [
      ["chat", "/chat/completions", text("deepseek", "openai-chat")],
      ["chat stream", "/chat/completions", text("deepseek", "openai-chat", true)],
      ["FIM completion", "/beta/completions", text("deepseek", "completions")]
    ]
  },
  bedrock: {
    // Bedrock Runtime's paths start at the root: no version suffix.
    versions: [],
    calls: [
      ["converse", `/model/${MODEL}/converse`, text("bedrock", "bedrock-converse")],
      ["converse stream", `/model/${MODEL}/converse-stream`, text("bedrock", "bedrock-converse", true)],
      ["invoke", `/model/${MODEL}/invoke`, text("bedrock", "anthropic")],
      ["invoke stream", `/model/${MODEL}/invoke-with-response-stream`, text("bedrock", "anthropic", true)]
    ]
  },
  azure: {
    // The `openai` SDK's `baseURL` forms of Azure (`…/openai`, `…/openai/v1`); a dated channel (settings {}) and v1.
    versions: ["/openai/v1", "/openai"],
    prefix: "/azure",
    calls: [
      ["chat", "/openai/deployments/m-1/chat/completions?api-version=2024-10-21", text("azure", "openai-chat")],
      ["completions", "/openai/deployments/m-1/completions?api-version=2024-10-21", text("azure", "completions")],
      [
        "embeddings",
        "/openai/deployments/m-1/embeddings?api-version=2024-10-21",
        (channel) => embeddingAdapters.azure!.target(channel, KEY, MODEL).url
      ],
      [
        "image edit",
        "/openai/deployments/m-1/images/edits?api-version=2024-10-21",
        (channel) => imageAdapters.azure!.target(channel, KEY, MODEL, true, true).url
      ],
      [
        "transcriptions",
        "/openai/deployments/m-1/audio/transcriptions?api-version=2024-10-21",
        (channel) => audioAdapters.azure!.target(channel, KEY, "transcriptions", MODEL).url
      ],
      [
        "v1 responses",
        "/openai/v1/responses",
        (channel) => text("azure", "openai-responses")({ ...channel, settings: { api_version: "v1" } })
      ],
      ["video (always v1)", "/openai/v1/videos/video_1", video("azure", "/v1/videos/video_1")],
      [
        "v1 speech",
        "/openai/v1/audio/speech",
        (channel) =>
          audioAdapters.azure!.target({ ...channel, settings: { api_version: "v1" } }, KEY, "speech", MODEL).url
      ]
    ]
  },
  vertex: {
    // `@anthropic-ai/vertex-sdk`'s base URL ends in `/v1`.
    versions: ["/v1"],
    calls: [
      ["gemini", `${VERTEX_PLACE}/publishers/google/models/m-1:generateContent`, text("vertex", "gemini")],
      [
        "gemini stream",
        `${VERTEX_PLACE}/publishers/google/models/m-1:streamGenerateContent?alt=sse`,
        text("vertex", "gemini", true)
      ],
      ["claude", `${VERTEX_PLACE}/publishers/anthropic/models/m-1:rawPredict`, text("vertex", "anthropic")],
      [
        "claude stream",
        `${VERTEX_PLACE}/publishers/anthropic/models/m-1:streamRawPredict`,
        text("vertex", "anthropic", true)
      ],
      [
        "embeddings",
        `${VERTEX_PLACE}/publishers/google/models/m-1:predict`,
        (channel) => embeddingAdapters.vertex!.target(channel, KEY, MODEL).url
      ]
    ]
  }
}

/** The project and location the vertex cases' channels name. */
const VERTEX_SETTINGS = { project: "p-1", location: "europe-west4" }

const channelOf = (type: ChannelType, baseUrl: string): Channel => ({
  type,
  baseUrl,
  settings: type === "vertex" ? VERTEX_SETTINGS : {}
})

/** `path` with `query` added after its own. */
const withQuery = (path: string, query: string): string => `${path}${path.includes("?") ? "&" : "?"}${query}`

for (
  const [type, { versions, calls, prefix = "/openai" }] of Object.entries(CASES) as ReadonlyArray<
    [ChannelType, TypeCase]
  >
) {
  Deno.test(`base URL: ${type} keeps a path prefix, with or without a trailing slash or version suffix`, () => {
    for (const [label, path, url] of calls) {
      const proxy = `http://proxy.internal${prefix}`
      const bases = [
        proxy,
        `${proxy}/`,
        `${proxy}//`,
        ...versions.flatMap((version) => [`${proxy}${version}`, `${proxy}${version}/`])
      ]
      for (const base of bases) {
        strictEqual(url(channelOf(type, base)), `${proxy}${path}`, `${type} ${label} on ${base}`)
      }
      for (
        const base of [
          "https://api.vendor.test",
          "https://api.vendor.test/",
          `https://api.vendor.test${versions[0] ?? ""}`
        ]
      ) {
        strictEqual(url(channelOf(type, base)), `https://api.vendor.test${path}`, `${type} ${label} on ${base}`)
      }
      strictEqual(
        url(channelOf(type, "http://proxy.internal:8080/a/b?tenant=t1")),
        `http://proxy.internal:8080/a/b${withQuery(path, "tenant=t1")}`,
        `${type} ${label}: the base URL's query after the call's`
      )
    }
  })
}

Deno.test("base URL: the examples of the rule", () => {
  const chat = (baseUrl: string) => text("openai", "openai-chat")(channelOf("openai", baseUrl))
  strictEqual(chat("http://proxy.internal/openai"), "http://proxy.internal/openai/v1/chat/completions")
  strictEqual(
    chat("https://gateway.ai.cloudflare.com/v1/acct/gw/openai"),
    "https://gateway.ai.cloudflare.com/v1/acct/gw/openai/v1/chat/completions"
  )
  strictEqual(chat("http://host/prefix/v1"), "http://host/prefix/v1/chat/completions")
  strictEqual(chat("http://host/prefix/v1/"), "http://host/prefix/v1/chat/completions")
  strictEqual(chat("https://api.openai.com"), "https://api.openai.com/v1/chat/completions")
  // One version suffix is removed, only at the end, only in the path (never the host).
  strictEqual(chat("http://host/v1/v1"), "http://host/v1/v1/chat/completions")
  strictEqual(chat("http://v1"), "http://v1/v1/chat/completions")
  strictEqual(chat("http://host/xv1"), "http://host/xv1/v1/chat/completions")
  strictEqual(chat("http://user:pw@host/p"), "http://user:pw@host/p/v1/chat/completions")
  strictEqual(chat("http://host/p#frag"), "http://host/p/v1/chat/completions")
  // DeepSeek's default base URL and its documented alternatives.
  const deepseekChat = (baseUrl: string) => text("deepseek", "openai-chat")(channelOf("deepseek", baseUrl))
  strictEqual(deepseekChat("https://api.deepseek.com"), "https://api.deepseek.com/chat/completions")
  strictEqual(deepseekChat("https://api.deepseek.com/v1"), "https://api.deepseek.com/chat/completions")
  strictEqual(
    text("deepseek", "completions")(channelOf("deepseek", "https://api.deepseek.com/beta")),
    "https://api.deepseek.com/beta/completions"
  )
  // Vertex AI's default endpoints and the Anthropic SDK's `/v1` base URL; a Claude model id keeps its `@`.
  const vertex = (baseUrl: string, model: string) =>
    adapters.vertex.target(channelOf("vertex", baseUrl), KEY, "anthropic", model, false).url
  strictEqual(
    vertex("https://europe-west4-aiplatform.googleapis.com/v1", "claude-sonnet-4-5@20250929"),
    "https://europe-west4-aiplatform.googleapis.com/v1/projects/p-1/locations/europe-west4/publishers/anthropic/models/" +
      "claude-sonnet-4-5@20250929:rawPredict"
  )
  // Cohere's documented OpenAI-compatible base URL: its chat not doubled, its rerank on the API root.
  const cohere = channelOf("cohere", "https://api.cohere.ai/compatibility/v1")
  strictEqual(text("cohere", "openai-chat")(cohere), "https://api.cohere.ai/compatibility/v1/chat/completions")
  strictEqual(rerankAdapters.cohere!.target(cohere, KEY).url, "https://api.cohere.ai/v2/rerank")
})

Deno.test("base URL: a bedrock channel's default is its region's endpoint, and a model id is one encoded segment", () => {
  const base = baseUrlOf("bedrock", undefined, { region: "eu-central-1" })
  strictEqual(base, "https://bedrock-runtime.eu-central-1.amazonaws.com")
  strictEqual(baseUrlOf("bedrock", undefined, { region: "us-east-1.evil.test/" }), undefined)
  strictEqual(baseUrlOf("bedrock", undefined, undefined), undefined)
  strictEqual(baseUrlOf("bedrock", "http://proxy.internal/aws", { region: "us-east-1" }), "http://proxy.internal/aws")
  const channel: Channel = { type: "bedrock", baseUrl: base!, settings: { region: "eu-central-1" } }
  strictEqual(
    adapters.bedrock.target(channel, KEY, "bedrock-converse", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", true).url,
    "https://bedrock-runtime.eu-central-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
  )
  strictEqual(
    adapters.bedrock.target(
      channel,
      KEY,
      "bedrock-converse",
      "arn:aws:bedrock:eu-central-1:123456789012:inference-profile/eu.meta.llama3-2-1b-instruct-v1:0",
      false
    ).url,
    "https://bedrock-runtime.eu-central-1.amazonaws.com/model/" +
      "arn%3Aaws%3Abedrock%3Aeu-central-1%3A123456789012%3Ainference-profile%2Feu.meta.llama3-2-1b-instruct-v1%3A0/converse"
  )
})

Deno.test("base URL: a prefix is never dropped or doubled, and no `//` appears (property)", () => {
  const segment = fc.stringMatching(/^[a-z0-9-]{1,8}$/)
  fc.assert(
    fc.property(
      fc.array(segment, { maxLength: 4 }),
      fc.constantFrom("", "/", "//"),
      fc.boolean(),
      (segments, slash, versioned) => {
        const prefix = segments.map((part) => `/${part}`).join("")
        // A prefix that itself ends in the version is the versioned case.
        if (prefix.endsWith("/v1")) return
        const base = `https://h.test${prefix}${versioned ? "/v1" : ""}${slash}`
        const url = upstreamUrl(base, "/v1/chat/completions", ["/v1", "/v1beta"])
        strictEqual(url, `https://h.test${prefix}/v1/chat/completions`)
        strictEqual(url.slice("https://".length).includes("//"), false)
      }
    )
  )
})
