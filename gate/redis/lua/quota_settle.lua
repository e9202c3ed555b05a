-- quota_settle.lua: QuotaGate.Settle(permit, actualTokens).
-- KEYS[1] bucket hash (see quota_common.lua).
-- ARGV[1..3]  TPM drain, unit, capacity
-- ARGV[4]     correction in tokens, actual − estimate, already bounded to
--             ±2·TPM by the caller
-- Reply: the TPM level afterwards, in scaled units (for tests).
return settle(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
