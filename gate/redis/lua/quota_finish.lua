-- quota_finish.lua: Quota.Finish(permit, actualTokens), Settle then Release
-- in one script.
-- KEYS[1] bucket hash, KEYS[2] in-flight lease set (see quota_common.lua);
--         one hash tag, one slot.
-- ARGV[1..3]  TPM drain, unit, capacity
-- ARGV[4]     correction in tokens, actual − estimate, already bounded to
--             ±2·TPM by the caller
-- ARGV[5]     permit ID, the lease member
-- Reply: {TPM level afterwards in scaled units, 1 when the lease was held
-- and is now freed else 0} (for tests).
local level = settle(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
return {level, redis.call('ZREM', KEYS[2], ARGV[5])}
