-- quota_acquire.lua: QuotaGate.Acquire(source, estTokens).
-- KEYS[1] bucket hash, KEYS[2] in-flight lease set (see quota_common.lua).
-- ARGV[1..3]  RPM drain, unit, capacity (all 0: no RPM limit)
-- ARGV[4..6]  TPM drain, unit, capacity (all 0: no TPM limit)
-- ARGV[7]     MaxInFlight (0: no limit)
-- ARGV[8]     lease length, µs
-- ARGV[9]     estimated tokens (0 ≤ est ≤ TPM, checked by the caller)
-- ARGV[10]    permit ID, the lease member
-- (The source's constants first, the call's last: the Go side builds the
-- command up to ARGV[8] once per source.)
-- Reply: {allowed 0|1, retry_after µs, limit 0 none|1 rpm|2 tpm|3 in_flight}.
-- All or nothing: a rejection writes nothing but the removal of expired
-- leases. retry_after is the rate limits' exact wait; 0 when only
-- MaxInFlight rejects (a slot frees whenever a call ends: no certain wait).
-- The decision and the write are quota_common.lua's acquire and
-- commit_acquire, which admit.lua runs too.
local q = acquire(KEYS[1], KEYS[2], ARGV, 0)
if not q.ok then
  return { 0, q.wait, q.limit }
end
commit_acquire(KEYS[1], KEYS[2], q)
return { 1, 0, 0 }
