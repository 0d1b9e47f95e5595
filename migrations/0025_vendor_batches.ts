/**
 * The vendor state of a batch delegated to a vendor's batch API (src/batches/VendorRunner.ts, docs/ROUTES.md
 * "Vendor delegation"), on `batches`: `vendor_phase` (NULL: not decided yet; `deciding`: an instance is choosing
 * and submitting; `gateway`: the gateway runs its lines itself; `running` and `cancelling`: at the vendor;
 * `done`: the vendor's results are recorded on the lines), the vendor API (`openai` or `anthropic`), the channel and
 * the key (its position among the channel's keys) it was submitted with, the vendor's batch id and input file id
 * (OpenAI), when it was last retrieved, and the claim of the instance that submits and polls it (`vendor_claimed_by`,
 * `vendor_claimed_until`, a lease like a line's). Batches made before this migration run on the gateway.
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE batches
    ADD COLUMN vendor_phase TEXT
      CHECK (vendor_phase IN ('deciding', 'gateway', 'running', 'cancelling', 'done')),
    ADD COLUMN vendor_api TEXT CHECK (vendor_api IN ('anthropic', 'openai')),
    ADD COLUMN vendor_channel_id INTEGER,
    ADD COLUMN vendor_key_position INTEGER,
    ADD COLUMN vendor_batch_id TEXT,
    ADD COLUMN vendor_file_id TEXT,
    ADD COLUMN vendor_polled_at TIMESTAMPTZ,
    ADD COLUMN vendor_claimed_by TEXT,
    ADD COLUMN vendor_claimed_until TIMESTAMPTZ`
  yield* sql`UPDATE batches SET vendor_phase = 'gateway'`
})
