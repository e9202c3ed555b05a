-- quota_release.lua: QuotaGate.Release(permit).
-- KEYS[1] in-flight lease set (see quota_common.lua).
-- ARGV[1] permit ID, the lease member.
-- Reply: 1 when the lease was held and is now freed, 0 when it was already
-- released or had expired — releasing twice is harmless.
return redis.call('ZREM', KEYS[1], ARGV[1])
