/**
 * SigV4 signing against AWS's own published examples, and the channel key format `awsCredentialsOf` reads.
 *
 * `signSigV4` (which always sends and signs `x-amz-content-sha256`, as Bedrock's SDK does) is checked against the
 * three worked examples of the Amazon S3 API reference, "Signature Calculations for the Authorization Header:
 * Transferring Payload in a Single Chunk (AWS Signature Version 4)"
 * (docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html): GET Object, GET Bucket Lifecycle and
 * GET Bucket (List Objects), access key `AKIAIOSFODNN7EXAMPLE`, date 2013-05-24, region `us-east-1`, service `s3`.
 * Their paths need no escaping, so S3's single escaping and everyone else's double escaping sign them alike. AWS
 * prints the header without spaces after the commas; `@smithy/signature-v4` puts one there, which AWS accepts.
 *
 * The emulator's verifier (`BedrockAuth.verifyBedrockRequest`, which signs with no added checksum header) is checked
 * against the Signature Version 4 test suite's `get-vanilla`, `post-vanilla` and `get-vanilla-query-order-key-case`
 * (AKIDEXAMPLE, 20150830T123600Z, us-east-1, service `service`; the suite's files as kept in awslabs/aws-c-auth,
 * tests/aws-signing-test-suite/v4/<case>/header-signed-request.txt): it takes AWS's published signatures and refuses
 * them with one byte changed.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict"
import { Effect } from "effect"
import { awsCredentialsOf, signSigV4, type SigV4Signing } from "../../../src/upstreams/auth/CallSigning.ts"
import {
  BEDROCK_TEST_ACCESS_KEY_ID,
  BEDROCK_TEST_SECRET_ACCESS_KEY,
  verifyBedrockRequest
} from "../../../emulator/BedrockAuth.ts"

const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

const s3Example: SigV4Signing = {
  _tag: "SigV4",
  region: "us-east-1",
  service: "s3",
  credentials: { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" }
}

const s3Date = new Date("2013-05-24T00:00:00Z")

const signS3 = (url: string, headers: Record<string, string> = {}) =>
  Effect.runPromise(signSigV4(s3Example, { method: "GET", url, headers, body: undefined }, s3Date))

Deno.test("signSigV4: the S3 reference's GET Object example (a Range header signed)", async () => {
  const headers = await signS3("https://examplebucket.s3.amazonaws.com/test.txt", { range: "bytes=0-9" })
  strictEqual(
    headers.authorization,
    "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
      "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, " +
      "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
  )
  strictEqual(headers["x-amz-date"], "20130524T000000Z")
  strictEqual(headers["x-amz-content-sha256"], EMPTY_SHA256)
  strictEqual(headers.range, "bytes=0-9")
})

Deno.test("signSigV4: the S3 reference's GET Bucket Lifecycle example (a query key with no value)", async () => {
  const headers = await signS3("https://examplebucket.s3.amazonaws.com/?lifecycle")
  strictEqual(
    headers.authorization,
    "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
      "SignedHeaders=host;x-amz-content-sha256;x-amz-date, " +
      "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"
  )
})

Deno.test("signSigV4: the S3 reference's List Objects example (query parameters sorted by name)", async () => {
  const headers = await signS3("https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J")
  strictEqual(
    headers.authorization,
    "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
      "SignedHeaders=host;x-amz-content-sha256;x-amz-date, " +
      "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
  )
})

Deno.test("signSigV4: a session token is sent and signed; another date gives another signature", async () => {
  const signing: SigV4Signing = { ...s3Example, credentials: { ...s3Example.credentials, sessionToken: "token-1" } }
  const call = {
    method: "GET" as const,
    url: "https://examplebucket.s3.amazonaws.com/test.txt",
    headers: {},
    body: undefined
  }
  const withToken = await Effect.runPromise(signSigV4(signing, call, s3Date))
  strictEqual(withToken["x-amz-security-token"], "token-1")
  strictEqual(
    withToken.authorization.includes("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token"),
    true
  )
  const later = await Effect.runPromise(signSigV4(signing, call, new Date("2013-05-25T00:00:00Z")))
  strictEqual(later["x-amz-date"], "20130525T000000Z")
  strictEqual(later.authorization === withToken.authorization, false)
})

/** A published test-suite request as the emulator would receive it. */
const suiteRequest = (method: string, url: string, authorization: string) => ({
  method,
  url: new URL(url),
  headers: new Headers({ host: "example.amazonaws.com", "x-amz-date": "20150830T123600Z", authorization }),
  body: new Uint8Array()
})

const suiteAccounts = {
  secrets: { [BEDROCK_TEST_ACCESS_KEY_ID]: BEDROCK_TEST_SECRET_ACCESS_KEY },
  apiKeys: new Set<string>()
}
const suiteNow = new Date("2015-08-30T12:36:00Z")
const suiteAuthorization = (signature: string) =>
  "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, " +
  `SignedHeaders=host;x-amz-date, Signature=${signature}`

const suiteCases = [
  [
    "get-vanilla",
    "GET",
    "https://example.amazonaws.com/",
    "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
  ],
  [
    "post-vanilla",
    "POST",
    "https://example.amazonaws.com/",
    "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"
  ],
  [
    "get-vanilla-query-order-key-case",
    "GET",
    "https://example.amazonaws.com/?Param2=value2&Param1=value1",
    "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
  ]
] as const

for (const [name, method, url, signature] of suiteCases) {
  Deno.test(`the emulator's SigV4 verifier takes the test suite's ${name} signature and refuses it altered`, async () => {
    const taken = await verifyBedrockRequest(
      suiteRequest(method, url, suiteAuthorization(signature)),
      suiteAccounts,
      suiteNow,
      "service"
    )
    deepStrictEqual(taken, { ok: true, key: "AKIDEXAMPLE", region: "us-east-1" })
    const altered = signature.slice(0, -1) + (signature.endsWith("0") ? "1" : "0")
    const refused = await verifyBedrockRequest(
      suiteRequest(method, url, suiteAuthorization(altered)),
      suiteAccounts,
      suiteNow,
      "service"
    )
    strictEqual(refused.ok ? "taken" : refused.exception, "InvalidSignatureException")
  })
}

Deno.test("the emulator's SigV4 verifier refuses a request more than five minutes from its x-amz-date", async () => {
  const request = suiteRequest("GET", "https://example.amazonaws.com/", suiteAuthorization(suiteCases[0][3]))
  const late = await verifyBedrockRequest(request, suiteAccounts, new Date("2015-08-30T12:41:01Z"), "service")
  deepStrictEqual(late, {
    ok: false,
    exception: "InvalidSignatureException",
    message: "Signature expired: 20150830T123600Z is now earlier than 20150830T123601Z (20150830T124101Z - 5 min.)"
  })
  const early = await verifyBedrockRequest(request, suiteAccounts, new Date("2015-08-30T12:30:59Z"), "service")
  strictEqual(early.ok ? "" : early.message.startsWith("Signature not yet current: 20150830T123600Z"), true)
  const inTime = await verifyBedrockRequest(request, suiteAccounts, new Date("2015-08-30T12:41:00Z"), "service")
  strictEqual(inTime.ok, true)
})

Deno.test("awsCredentialsOf: id|secret and id|secret|token; anything else is not AWS credentials", () => {
  deepStrictEqual(awsCredentialsOf("AKIDEXAMPLE|wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"), {
    accessKeyId: "AKIDEXAMPLE",
    secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    sessionToken: undefined
  })
  deepStrictEqual(awsCredentialsOf("ASIAEXAMPLE|secret|FwoGZXIvYXdzEXAMPLE"), {
    accessKeyId: "ASIAEXAMPLE",
    secretAccessKey: "secret",
    sessionToken: "FwoGZXIvYXdzEXAMPLE"
  })
  for (const key of ["sk-test-bedrock-api-key", "a|b|c|d", "|secret", "id|", "id|secret|", "||"]) {
    strictEqual(awsCredentialsOf(key), undefined, key)
  }
})
