/**
 * The static migration list, run at start by Effect's `Migrator` on PGlite and
 * PostgreSQL alike. Explicit imports keep the type checker aware of every
 * migration (no directory scan at run time).
 *
 * @since 0.1.0
 */
import { Migrator } from "effect/sql"
import initial from "./0001_initial.ts"
import storedResponses from "./0002_stored_responses.ts"
import quotaLeases from "./0003_quota_leases.ts"
import exactlyOnce from "./0004_exactly_once.ts"
import accounts from "./0005_accounts.ts"
import tasks from "./0006_tasks.ts"
import assets from "./0007_assets.ts"
import accountHardening from "./0008_account_hardening.ts"
import imageContents from "./0009_image_contents.ts"
import budgets from "./0010_budgets.ts"
import audioPrices from "./0011_audio_prices.ts"
import midjourney from "./0012_midjourney.ts"
import channelHealth from "./0013_channel_health.ts"
import gatewaySecrets from "./0014_gateway_secrets.ts"
import chargeJournal from "./0015_charge_journal.ts"
import realtimePrices from "./0016_realtime_prices.ts"
import realtimeUsageAndSecrets from "./0017_realtime_usage_and_secrets.ts"
import files from "./0018_files.ts"
import batches from "./0019_batches.ts"
import channelHealthHistory from "./0020_channel_health_history.ts"
import batchPrices from "./0022_batch_prices.ts"
import listFilters from "./0023_list_filters.ts"
import healthRollup from "./0024_health_rollup.ts"
import vendorBatches from "./0025_vendor_batches.ts"
import firstToken from "./0026_first_token.ts"
import rollupTiers from "./0027_rollup_tiers.ts"

/** @category migrations */
export const loader = Migrator.fromRecord({
  "0001_initial": initial,
  "0002_stored_responses": storedResponses,
  "0003_quota_leases": quotaLeases,
  "0004_exactly_once": exactlyOnce,
  "0005_accounts": accounts,
  "0006_tasks": tasks,
  "0007_assets": assets,
  "0008_account_hardening": accountHardening,
  "0009_image_contents": imageContents,
  "0010_budgets": budgets,
  "0011_audio_prices": audioPrices,
  "0012_midjourney": midjourney,
  "0013_channel_health": channelHealth,
  "0014_gateway_secrets": gatewaySecrets,
  "0015_charge_journal": chargeJournal,
  "0016_realtime_prices": realtimePrices,
  "0017_realtime_usage_and_secrets": realtimeUsageAndSecrets,
  "0018_files": files,
  "0019_batches": batches,
  "0020_channel_health_history": channelHealthHistory,
  "0022_batch_prices": batchPrices,
  "0023_list_filters": listFilters,
  "0024_health_rollup": healthRollup,
  "0025_vendor_batches": vendorBatches,
  "0026_first_token": firstToken,
  "0027_rollup_tiers": rollupTiers
})
