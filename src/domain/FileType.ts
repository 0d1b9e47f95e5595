/**
 * `file-type`'s sniffer (the media type of bytes, read from their magic
 * numbers), loaded on first use: about 2 MiB of modules a gateway that never
 * sniffs does not hold (`test/StartupImports.test.ts` keeps it out of the
 * static import graph).
 *
 * @since 0.1.0
 */
import type { fileTypeFromBuffer as FileTypeFromBuffer } from "file-type"

/**
 * `fileTypeFromBuffer` of `file-type`, imported on its first call: the type
 * (`mime`, `ext`) the bytes' start shows, `undefined` when none is known;
 * rejects as `file-type` does.
 *
 * @category sniffing
 */
export const fileTypeFromBuffer: typeof FileTypeFromBuffer = async (bytes) =>
  await (await import("file-type")).fileTypeFromBuffer(bytes)
