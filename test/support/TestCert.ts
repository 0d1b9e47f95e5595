/**
 * A self-signed certificate for `127.0.0.1`, made once per test process with `openssl` (an EC P-256 key, valid for
 * a day), for the TLS listener clients that only speak `wss://` need (the `openai` package's Realtime clients).
 */

let made: Promise<{ readonly cert: string; readonly key: string }> | undefined

/** The PEM certificate and key (made on first use, in a temporary directory removed right after). */
export const testCertificate = (): Promise<{ readonly cert: string; readonly key: string }> =>
  made ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice-cert-" })
    try {
      const output = await new Deno.Command("openssl", {
        args: [
          "req",
          "-x509",
          "-newkey",
          "ec",
          "-pkeyopt",
          "ec_paramgen_curve:prime256v1",
          "-nodes",
          "-days",
          "1",
          "-subj",
          "/CN=127.0.0.1",
          "-addext",
          "subjectAltName=IP:127.0.0.1",
          "-keyout",
          `${dir}/key.pem`,
          "-out",
          `${dir}/cert.pem`
        ],
        stdout: "null",
        stderr: "piped"
      }).output()
      if (!output.success) throw new Error(`openssl failed: ${new TextDecoder().decode(output.stderr)}`)
      return { cert: await Deno.readTextFile(`${dir}/cert.pem`), key: await Deno.readTextFile(`${dir}/key.pem`) }
    } finally {
      await Deno.remove(dir, { recursive: true })
    }
  })()
