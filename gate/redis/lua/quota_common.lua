-- quota_common.lua: the prelude of the quota scripts (quota_acquire.lua,
-- quota_settle.lua, quota_finish.lua). The Go side prepends it to each body before hashing, so
-- each operation is still ONE script and one EVALSHA, and the bucket
-- arithmetic exists once in Lua, as it exists once in Go
-- (gate/memory/quota_bucket.go). Nothing here touches Redis until a body
-- calls it.
--
-- Keys of one source, under one hash tag so a script touches one slot:
--   <prefix>:{<scope>:<source>}:quota     hash, the two rolling buckets
--     rl rs ru   RPM bucket: level (scaled units), stamp (server µs), unit
--     tl ts tu   TPM bucket: the same
--   <prefix>:{<scope>:<source>}:inflight  sorted set of in-flight leases,
--     member = permit ID, score = expiry in server µs
--
-- A bucket holds one minute's allowance of a limit n, in the exact integer
-- form of gate.Rate: drain D = n/g scaled units per µs, one request or token
-- costs U = 60e6/g, capacity C = n·U, with g = gcd(n, 60e6). Go computes
-- D, U and C and passes them in ARGV; every value stays below 2^53, where
-- Lua's doubles are exact integers, so this file computes exactly what the
-- Go memory gate computes. The unit is stored beside the level so that a
-- changed limit rescales the level instead of misreading it.

-- int renders a whole number without exponent: tostring(1.7e15) in Lua 5.1
-- gives "1.7e+15".
local function int(n)
  return string.format('%d', n)
end

-- now_us is the server's time in µs, read once per script run: the parts
-- of a combined script (admit.lua, conclude.lua) decide at one instant and
-- pay for one TIME.
local now_cached
local function now_us()
  if not now_cached then
    local t = redis.call('TIME')
    now_cached = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return now_cached
end

-- bucket reads one bucket (fields prefix..'l', 's', 'u') with its rate.
local function bucket(raw, off, drain, unit, cap)
  local b = {
    level = tonumber(raw[off]) or 0,
    stamp = tonumber(raw[off + 1]) or 0,
    drain = drain, unit = unit, cap = cap,
  }
  local stored = tonumber(raw[off + 2])
  if stored and stored ~= unit and b.level > 0 then
    -- The limit changed: same share of the allowance, new units.
    b.level = math.min(math.ceil(b.level / stored * unit), 2 * cap)
  end
  return b
end

-- drain brings b to now. A server clock stepping back refills nothing.
-- elapsed·drain may exceed 2^53 only when it exceeds any level (< 2^52),
-- so the comparison stays right even then.
local function drain(b, now)
  if now <= b.stamp then
    return
  end
  local gone = (now - b.stamp) * b.drain
  b.stamp = now
  if gone >= b.level then
    b.level = 0
  else
    b.level = b.level - gone
  end
end

-- wait is 0 when cost fits, else the whole µs until it does: the least w with
-- level − w·drain + cost ≤ cap. The quotient is corrected by integer checks
-- so that no rounding of the division can make it one µs short or long.
local function wait(b, cost)
  local need = b.level + cost - b.cap
  if need <= 0 then
    return 0
  end
  local w = math.ceil(need / b.drain)
  while w * b.drain < need do
    w = w + 1
  end
  while w > 1 and (w - 1) * b.drain >= need do
    w = w - 1
  end
  return w
end

-- ms_to_empty is how long until b holds nothing: the TTL its fields need.
local function ms_to_empty(b)
  if b.drain <= 0 or b.level <= 0 then
    return 0
  end
  return math.ceil(b.level / b.drain / 1000)
end

-- settle corrects the TPM bucket at key by delta tokens (actual − estimate,
-- already bounded to ±2·TPM by the caller) and returns its level afterwards,
-- in scaled units. The level is kept within [0, 2·capacity]: a refund cannot
-- go below empty, and an overdraft beyond one extra minute's allowance is
-- forgiven. drain_, unit and cap are the TPM rate's ARGV values.
local function settle(key, drain_, unit, cap, delta)
  local now = now_us()
  local raw = redis.call('HMGET', key, 'tl', 'ts', 'tu')
  local tpm = bucket(raw, 1, drain_, unit, cap)
  drain(tpm, now)
  tpm.level = math.min(math.max(tpm.level + delta * tpm.unit, 0), 2 * tpm.cap)
  redis.call('HSET', key, 'tl', int(tpm.level), 'ts', int(tpm.stamp), 'tu', int(tpm.unit))
  -- The RPM fields may need longer than the TPM ones: never shorten the TTL.
  local ttl = ms_to_empty(tpm) + 1000
  if redis.call('PTTL', key) < ttl then
    redis.call('PEXPIRE', key, int(ttl))
  end
  return int(tpm.level)
end

-- -- body --
