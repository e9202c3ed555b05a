-- quota_settle.lua: QuotaGate.Settle(permit, actualTokens).
-- KEYS[1] bucket hash (see quota_common.lua).
-- ARGV[1..3]  TPM drain, unit, capacity
-- ARGV[4]     correction in tokens, actual − estimate, already bounded to
--             ±2·TPM by the caller
-- Reply: the TPM level afterwards, in scaled units (for tests).
-- The level is kept within [0, 2·capacity]: a refund cannot go below empty,
-- and an overdraft beyond one extra minute's allowance is forgiven.
local now = now_us()
local raw = redis.call('HMGET', KEYS[1], 'tl', 'ts', 'tu')
local tpm = bucket(raw, 1, tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
drain(tpm, now)
tpm.level = math.min(math.max(tpm.level + tonumber(ARGV[4]) * tpm.unit, 0), 2 * tpm.cap)
redis.call('HSET', KEYS[1], 'tl', int(tpm.level), 'ts', int(tpm.stamp), 'tu', int(tpm.unit))
-- The RPM fields may need longer than the TPM ones: never shorten the TTL.
local ttl = ms_to_empty(tpm) + 1000
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], int(ttl))
end
return int(tpm.level)
