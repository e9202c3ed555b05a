-- quota_acquire.lua: QuotaGate.Acquire(source, estTokens).
-- KEYS[1] bucket hash, KEYS[2] in-flight lease set (see quota_common.lua).
-- ARGV[1..3]  RPM drain, unit, capacity (all 0: no RPM limit)
-- ARGV[4..6]  TPM drain, unit, capacity (all 0: no TPM limit)
-- ARGV[7]     estimated tokens (0 ≤ est ≤ TPM, checked by the caller)
-- ARGV[8]     MaxInFlight (0: no limit)
-- ARGV[9]     lease length, µs
-- ARGV[10]    permit ID, the lease member
-- Reply: {allowed 0|1, retry_after µs, limit 0 none|1 rpm|2 tpm|3 in_flight}.
-- All or nothing: a rejection writes nothing but the removal of expired
-- leases. retry_after is the rate limits' exact wait; 0 when only MaxInFlight
-- rejects (a slot frees whenever a call ends: no certain wait).
local now = now_us()
local raw = redis.call('HMGET', KEYS[1], 'rl', 'rs', 'ru', 'tl', 'ts', 'tu')
local rpm = bucket(raw, 1, tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
local tpm = bucket(raw, 4, tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]))
local est = tonumber(ARGV[7])
local max_in_flight = tonumber(ARGV[8])

-- at: the µs from which the rate limits admit (0: now).
local at, limit = 0, 0
if rpm.drain > 0 then
  drain(rpm, now)
  local w = wait(rpm, rpm.unit)
  if w > 0 then
    at, limit = rpm.stamp + w, 1
  end
end
if tpm.drain > 0 then
  drain(tpm, now)
  local w = wait(tpm, est * tpm.unit)
  if w > 0 and tpm.stamp + w > at then
    at, limit = tpm.stamp + w, 2
  end
end

local full = false
if max_in_flight > 0 then
  -- A lease is alive while now < expiry.
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', int(now))
  full = redis.call('ZCARD', KEYS[2]) >= max_in_flight
end

if at > 0 then
  return { 0, at - now, limit }
end
if full then
  return { 0, 0, 3 }
end

local fields = {}
local ttl = 0
if rpm.drain > 0 then
  rpm.level = rpm.level + rpm.unit
  for _, v in ipairs({ 'rl', int(rpm.level), 'rs', int(rpm.stamp), 'ru', int(rpm.unit) }) do
    fields[#fields + 1] = v
  end
  ttl = math.max(ttl, ms_to_empty(rpm))
end
if tpm.drain > 0 then
  tpm.level = tpm.level + est * tpm.unit
  for _, v in ipairs({ 'tl', int(tpm.level), 'ts', int(tpm.stamp), 'tu', int(tpm.unit) }) do
    fields[#fields + 1] = v
  end
  ttl = math.max(ttl, ms_to_empty(tpm))
end
if #fields > 0 then
  redis.call('HSET', KEYS[1], unpack(fields))
  -- Once both buckets are empty the hash says nothing a missing key does not.
  redis.call('PEXPIRE', KEYS[1], int(ttl + 1000))
end
if max_in_flight > 0 then
  local lease = tonumber(ARGV[9])
  redis.call('ZADD', KEYS[2], int(now + lease), ARGV[10])
  -- Every lease has the same length, so this one expires last.
  redis.call('PEXPIRE', KEYS[2], int(math.ceil(lease / 1000) + 1000))
end
return { 1, 0, 0 }
