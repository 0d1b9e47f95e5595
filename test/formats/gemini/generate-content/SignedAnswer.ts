/**
 * A Gemini answer (generate-content) with a signed thought and a signature on
 * its function call, as the vendor sends them (thoughtSignature on the part).
 */
export const signedAnswer = {
  candidates: [{
    content: {
      role: "model",
      parts: [
        { text: "Need the weather.", thought: true, thoughtSignature: "VGhvdWdodA==" },
        { functionCall: { name: "get_weather", args: { city: "Paris" }, id: "fc-1" }, thoughtSignature: "Q2FsbA==" }
      ]
    },
    finishReason: "STOP"
  }],
  modelVersion: "gemini-2.5-flash",
  responseId: "r1"
}
