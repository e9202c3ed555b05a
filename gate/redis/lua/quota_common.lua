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
--     qx         the hash's expiry as last set (server µs)
--     ix         the in-flight set's expiry as last set (server µs)
--   <prefix>:{<scope>:<source>}:inflight  sorted set of in-flight leases,
--     member = permit ID, score = expiry in server µs
--
-- A bucket holds one minute's allowance of a limit n, in the exact integer
-- form of gate.Rate: drain D = n/g scaled units per µs, one request or token
-- costs U = 60e6/g, capacity C = n·U, with g = gcd(n, 60e6). Go computes
-- D, U and C and passes them in ARGV; every value stays below 2^53, where
-- Lua's doubles are exact integers, so this file computes exactly what the
-- Go memory gate computes. The unit is stored beside the level so that a
-- changed limit converts the level instead of misreading it.


-- A bucket is handled as plain numbers — level (scaled units), stamp (server
-- µs), and the rate's drain, unit and capacity — never as a table: these
-- scripts run on every call, and each table is an allocation the server's
-- Lua must also collect.

-- rescaled is a stored level in the units of the current limit: after a
-- limit changed, what was spent in the rolling minute (level ÷ stored unit
-- requests or tokens) counts against the new one, capped at one extra
-- minute's allowance. stored is the unit stored beside the level (nil:
-- none).
local function rescaled(level, stored, unit, cap)
  if stored and stored ~= unit and level > 0 then
    return math.min(math.ceil(level / stored * unit), 2 * cap)
  end
  return level
end

-- drained is a bucket's level and stamp brought to now. A server clock
-- stepping back refills nothing. elapsed·drain may exceed 2^53 only when it
-- exceeds any level (< 2^52), so the comparison stays right even then.
local function drained(level, stamp, drain, now)
  if now <= stamp then
    return level, stamp
  end
  local gone = (now - stamp) * drain
  if gone >= level then
    return 0, now
  end
  return level - gone, now
end

-- wait is 0 when cost fits a bucket at level, else the whole µs until it
-- does: the least w with level − w·drain + cost ≤ cap. The quotient is
-- corrected by integer checks so that no rounding of the division can make
-- it one µs short or long.
local function wait(level, cost, drain, cap)
  local need = level + cost - cap
  if need <= 0 then
    return 0
  end
  local w = math.ceil(need / drain)
  while w * drain < need do
    w = w + 1
  end
  while w > 1 and (w - 1) * drain >= need do
    w = w - 1
  end
  return w
end

-- ms_to_empty is how long until a bucket at level holds nothing: the TTL
-- its fields need.
local function ms_to_empty(level, drain)
  if drain <= 0 or level <= 0 then
    return 0
  end
  return math.ceil(level / drain / 1000)
end

-- HASH_SLACK_MS is how much longer than its buckets need a refreshed hash
-- lives: one minute, so that a busy source's hash is refreshed about once a
-- minute rather than at every write (each write lengthens what it needs).
local HASH_SLACK_MS = 60000

-- hash_expiry is the expiry (server µs) to give the bucket hash so that it
-- lives at least need_ms from now, or nil when the expiry last set (qx;
-- nil when unknown) already covers that: the TTL is never shortened, and
-- refreshed only when it falls short. The caller stores the new expiry as
-- qx with the bucket fields and sets the TTL to it.
local function hash_expiry(now, qx, need_ms)
  if qx and qx >= now + need_ms * 1000 then
    return nil
  end
  return now + (need_ms + HASH_SLACK_MS) * 1000
end

-- write_buckets writes fields (name, value, …) to the bucket hash at key
-- and, when qx is given, stores it as the hash's expiry and sets the TTL to
-- it (hash_expiry).
local function write_buckets(key, fields, now, qx)
  if qx then
    fields[#fields + 1] = 'qx'
    fields[#fields + 1] = int(qx)
  end
  redis.call('HSET', key, unpack(fields))
  if qx then
    redis.call('PEXPIRE', key, int(math.ceil((qx - now) / 1000)))
  end
end

-- settle corrects the TPM bucket at key by delta tokens (actual − estimate,
-- already bounded to ±2·TPM by the caller) and returns its level afterwards,
-- in scaled units. The level is kept within [0, 2·capacity]: a refund cannot
-- go below empty, and an overdraft beyond one extra minute's allowance is
-- forgiven. drain_, unit and cap are the TPM rate's ARGV values. more, when
-- given, lists further corrections applied after delta, each kept within
-- those bounds in turn, as separate settles at the same instant would be.
local function settle(key, drain_, unit, cap, delta, more)
  local now = now_us()
  local raw = redis.call('HMGET', key, 'tl', 'ts', 'tu', 'qx')
  local stored = tonumber(raw[3])
  local level, stamp = drained(rescaled(tonumber(raw[1]) or 0, stored, unit, cap), tonumber(raw[2]) or 0, drain_, now)
  level = math.min(math.max(level + delta * unit, 0), 2 * cap)
  if more then
    for i = 1, #more do
      level = math.min(math.max(level + more[i] * unit, 0), 2 * cap)
    end
  end
  -- The RPM fields may need longer than the TPM ones: never shorten the TTL.
  local qx = hash_expiry(now, tonumber(raw[4]), ms_to_empty(level, drain_) + 1000)
  if stored == unit and not qx then
    redis.call('HSET', key, 'tl', int(level), 'ts', int(stamp))
  else
    local fields = { 'tl', int(level), 'ts', int(stamp) }
    if stored ~= unit then
      fields[5], fields[6] = 'tu', int(unit)
    end
    write_buckets(key, fields, now, qx)
  end
  return int(level)
end

-- acquire decides QuotaGate.Acquire on hkey (the bucket hash) and lkey (the
-- in-flight lease set) with quota_acquire.lua's ARGV layout at
-- argv[off + 1 ..]: it
-- returns a table q whose q.ok says whether everything fits, else q.wait
-- (µs) and q.limit (1 rpm, 2 tpm, 3 in_flight). It writes nothing but the
-- removal of expired leases; commit_acquire writes the reservation.
local NO_FIELDS = {}
local function acquire(hkey, lkey, argv, off)
  local now = now_us()
  local raw = NO_FIELDS
  if argv[off + 1] ~= '0' or argv[off + 4] ~= '0' then
    raw = redis.call('HMGET', hkey, 'rl', 'rs', 'ru', 'tl', 'ts', 'tu', 'qx', 'ix')
  end
  local rd, ru, rc = tonumber(argv[off + 1]), tonumber(argv[off + 2]), tonumber(argv[off + 3])
  local td, tu, tc = tonumber(argv[off + 4]), tonumber(argv[off + 5]), tonumber(argv[off + 6])
  local rstored, tstored = tonumber(raw[3]), tonumber(raw[6])
  -- rl rs, tl ts: each bucket's level and stamp; ru_stored, tu_stored: its
  -- unit is stored already (each field written costs, so it is not written
  -- again).
  local q = {
    now = now,
    rl = rescaled(tonumber(raw[1]) or 0, rstored, ru, rc), rs = tonumber(raw[2]) or 0,
    rd = rd, ru = ru, rc = rc, ru_stored = rstored == ru,
    tl = rescaled(tonumber(raw[4]) or 0, tstored, tu, tc), ts = tonumber(raw[5]) or 0,
    td = td, tu = tu, tc = tc, tu_stored = tstored == tu,
    max_in_flight = tonumber(argv[off + 7]),
    lease = tonumber(argv[off + 8]),
    est = tonumber(argv[off + 9]),
    id = argv[off + 10],
    qx = tonumber(raw[7]),
    ix = tonumber(raw[8]),
    ok = false,
  }
  -- at: the µs from which the rate limits admit (0: now).
  local at, limit = 0, 0
  if rd > 0 then
    q.rl, q.rs = drained(q.rl, q.rs, rd, now)
    local w = wait(q.rl, ru, rd, rc)
    if w > 0 then
      at, limit = q.rs + w, 1
    end
  end
  if td > 0 then
    q.tl, q.ts = drained(q.tl, q.ts, td, now)
    local w = wait(q.tl, q.est * tu, td, tc)
    if w > 0 and q.ts + w > at then
      at, limit = q.ts + w, 2
    end
  end
  if at > 0 then
    q.wait, q.limit = at - now, limit
    return q
  end
  if q.max_in_flight > 0 then
    -- Expired leases matter only at the limit: below it the count, which
    -- may include some, is no more than the limit allows anyway, and the
    -- set's TTL bounds how long they linger. A lease is alive while now <
    -- expiry. The set is only counted here; expired leases are removed
    -- after the new lease is added (commit_acquire), or on a rejection,
    -- when live ones remain: a script never touches a set it emptied,
    -- which Redis deletes (see common.lua's rule).
    local n = redis.call('ZCARD', lkey)
    if n >= q.max_in_flight then
      local expired = redis.call('ZCOUNT', lkey, '-inf', int(now))
      n = n - expired
      if n >= q.max_in_flight then
        if expired > 0 then
          redis.call('ZREMRANGEBYSCORE', lkey, '-inf', int(now))
        end
        q.wait, q.limit = 0, 3
        return q
      end
      q.prune = expired > 0
    end
    q.leases = n
  end
  q.ok = true
  return q
end

-- commit_acquire writes the reservation acquire decided: the buckets'
-- levels and the in-flight lease, with the TTLs each key needs.
local function commit_acquire(hkey, lkey, q)
  local now = q.now
  local has_r, has_t = q.rd > 0, q.td > 0
  local need = 0
  if has_r then
    q.rl = q.rl + q.ru
    need = ms_to_empty(q.rl, q.rd)
  end
  if has_t then
    q.tl = q.tl + q.est * q.tu
    need = math.max(need, ms_to_empty(q.tl, q.td))
  end
  -- The lease set must outlive its newest lease; refreshed to two lease
  -- lengths, it is refreshed about once per lease length. Its expiry is
  -- kept in the bucket hash (ix) when there is one; a set that was empty
  -- may be new (Redis deletes an emptied set), so it gets its TTL anyway.
  local ix
  if q.max_in_flight > 0 and (not (has_r or has_t) or q.leases == 0 or not q.ix or q.ix < now + q.lease + 1000000) then
    ix = now + 2 * q.lease + 1000000
  end
  if has_r or has_t then
    -- Once both buckets are empty the hash says nothing a missing key does not.
    local qx = hash_expiry(now, q.qx, need + 1000)
    if ix or qx or (has_r and not q.ru_stored) or (has_t and not q.tu_stored) then
      local fields = {}
      if has_r then
        fields[1], fields[2], fields[3], fields[4] = 'rl', int(q.rl), 'rs', int(q.rs)
        if not q.ru_stored then
          fields[5], fields[6] = 'ru', int(q.ru)
        end
      end
      if has_t then
        local n = #fields
        fields[n + 1], fields[n + 2], fields[n + 3], fields[n + 4] = 'tl', int(q.tl), 'ts', int(q.ts)
        if not q.tu_stored then
          fields[n + 5], fields[n + 6] = 'tu', int(q.tu)
        end
      end
      if ix then
        fields[#fields + 1] = 'ix'
        fields[#fields + 1] = int(ix)
      end
      write_buckets(hkey, fields, now, qx)
    elseif has_t and has_r then
      -- The common write: the levels and stamps, with nothing to refresh.
      redis.call('HSET', hkey, 'rl', int(q.rl), 'rs', int(q.rs), 'tl', int(q.tl), 'ts', int(q.ts))
    elseif has_r then
      redis.call('HSET', hkey, 'rl', int(q.rl), 'rs', int(q.rs))
    else
      redis.call('HSET', hkey, 'tl', int(q.tl), 'ts', int(q.ts))
    end
  end
  if q.max_in_flight > 0 then
    redis.call('ZADD', lkey, int(now + q.lease), q.id)
    if q.prune then
      redis.call('ZREMRANGEBYSCORE', lkey, '-inf', int(now))
    end
    if ix then
      redis.call('PEXPIRE', lkey, int(math.ceil((ix - now) / 1000)))
    end
  end
end
