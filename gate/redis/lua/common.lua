-- common.lua: the prelude every breaker script starts with. The Go side
-- prepends it to each script body before hashing, so each operation is still
-- ONE script (one EVALSHA) while the record layout and the state machine
-- helpers exist once. Nothing here touches Redis until a body calls it.
--
-- Record layout, all under one hash tag so a script touches one slot:
--   KEYS[1] = <prefix>:{<scope>:<source>}:cb      hash, the breaker record
--     st   state: 0 Closed, 1 Open, 2 HalfOpen (gate.State values)
--     seq  last number handed out; generations and probe leases share it
--          (next_number: never below the server clock in µs)
--     gen  token of the current generation
--     cf   consecutive failures while Closed
--     ps   probe successes in the current HalfOpen phase
--     pf   probe failures tolerated in the current HalfOpen phase
--          (HalfOpenCalls; absent otherwise)
--     cd   cooldown (µs) of the next or current Open phase
--     ou   openUntil, server time in µs (meaningful while Open; 0 when
--          forced Open: no end)
--     fo   operator override (gate.Force): 0 none, 1 forced Open,
--          2 forced Closed (force.lua); a forced record keeps no TTL
--     x    the key's expiry as the last refresh set it (server µs; see save)
--     pn pt  the nonce of the request the latest probe lease was granted to,
--          and that lease's token (try_enter.lua; read by probe_forget.lua
--          only)
--     w<i> c<i> f<i>  window ring slot i (0..9): bucket index, calls, failures
--   KEYS[2] = <prefix>:{<scope>:<source>}:probes  sorted set of probe leases,
--     member = lease token, score = expiry in server µs
--
-- ARGV[1..NPOLICY] is the policy, the same for every script:
--   1 key TTL ms    2 window bucket width ms (0: no window)
--   3 the rest, comma-separated: ConsecutiveFailures (-1: off), Cooldown µs,
--     MaxCooldown µs, CooldownMultiplier, ProbeTTL µs, SuccessThreshold,
--     HalfOpenProbes, WindowMinCalls, WindowFailureRate, WindowFailures
--     (0: off), HalfOpenCalls (0: off)
-- The two the fast paths of admit.lua and conclude.lua read come first, on
-- their own; the rest travels as one argument, parsed only by a script that
-- needs it, because each argument costs the server (and the client) work.
-- Script-specific arguments follow from ARGV[NPOLICY + 1].
--
-- Time is the server's (TIME), in µs; a lease is alive while now < expiry;
-- Open moves on at now >= openUntil.

local CLOSED, OPEN, HALF_OPEN = 0, 1, 2
local FORCE_NONE, FORCE_OPEN, FORCE_CLOSED = 0, 1, 2
local BUCKETS = 10
local NPOLICY = 3

-- P is the policy, parsed on first use.
local PACKED = {
  'failures', 'cooldown', 'max_cooldown', 'multiplier', 'probe_ttl', 'successes',
  'probes', 'min_calls', 'rate', 'window_failures', 'half_open_calls',
}
local P = setmetatable({}, {
  __index = function(t, k)
    if k == 'ttl' then
      rawset(t, k, tonumber(ARGV[1]))
    elseif k == 'width' then
      rawset(t, k, tonumber(ARGV[2]))
    else
      local i = 0
      for v in string.gmatch(ARGV[3], '[^,]+') do
        i = i + 1
        rawset(t, PACKED[i], tonumber(v))
      end
    end
    return rawget(t, k)
  end,
})

-- RECORD_FIELDS are the fields every script reads; the window ring's 30
-- are read only when the policy has a window. x is the key's expiry as
-- the last refresh set it (server µs), so that a script can tell whether
-- the TTL needs refreshing without asking (PTTL).
local RECORD_FIELDS = { 'st', 'seq', 'gen', 'cf', 'ps', 'pf', 'cd', 'ou', 'fo', 'x' }
local RING_FIELDS = {
  'w0', 'c0', 'f0', 'w1', 'c1', 'f1', 'w2', 'c2', 'f2', 'w3', 'c3', 'f3', 'w4', 'c4', 'f4',
  'w5', 'c5', 'f5', 'w6', 'c6', 'f6', 'w7', 'c7', 'f7', 'w8', 'c8', 'f8', 'w9', 'c9', 'f9',
}

-- load reads the record; a missing key is a fresh Closed record. r.dirty
-- collects the fields to write back.
local function load(key)
  local fields = RECORD_FIELDS
  if P.width > 0 then
    fields = { unpack(RECORD_FIELDS) }
    for i = 1, #RING_FIELDS do
      fields[#fields + 1] = RING_FIELDS[i]
    end
  end
  local raw = redis.call('HMGET', key, unpack(fields))
  local r = { dirty = {} }
  local exists = false
  for i = 1, #fields do
    local v = raw[i]
    if v then
      r[fields[i]] = tonumber(v)
      exists = true
    end
  end
  r.exists = exists
  r.st = r.st or CLOSED
  r.seq = r.seq or 0
  r.gen = r.gen or 0
  r.cf = r.cf or 0
  r.ps = r.ps or 0
  r.pf = r.pf or 0
  r.cd = r.cd or P.cooldown
  r.ou = r.ou or 0
  r.fo = r.fo or FORCE_NONE
  return r
end

local function set(r, field, value)
  r[field] = value
  r.dirty[field] = true
end

-- save writes the changed fields and keeps the record's TTL (see doc.go for
-- the TTL's length). The TTL is refreshed when a state or openUntil
-- changes, when the refresh is forced (r.refresh), and otherwise only once
-- less than half of it is left: a record in use then always has at least
-- max(MaxCooldown, ProbeTTL, Window) to live, and a busy source's scripts
-- skip the PEXPIRE nearly always. A forced record keeps none: force.lua
-- removed it, and an override lasts until it is cleared.
local function save(r, keys)
  if r.fo == FORCE_NONE and (r.exists or next(r.dirty)) then
    local now = now_us()
    local ttl_ms = P.ttl
    if r.refresh or r.dirty.st or r.dirty.ou or not r.x or r.x - now < ttl_ms * 500 then
      set(r, 'x', now + ttl_ms * 1000)
      r.expire = true
    end
  end
  local args = {}
  for field in pairs(r.dirty) do
    args[#args + 1] = field
    args[#args + 1] = int(r[field])
  end
  if #args > 0 then
    redis.call('HSET', keys[1], unpack(args))
    r.exists = true
  end
  if r.expire then
    redis.call('PEXPIRE', keys[1], int(P.ttl))
  end
end

-- remaining is the pinned RetryAfter: openUntil − now while Open and not yet
-- due, 0 otherwise.
local function remaining(r, now)
  if r.st == OPEN and now < r.ou then
    return r.ou - now
  end
  return 0
end

-- next_number hands out the record's next fencing number (a generation or
-- a probe lease token): one more than the last, or the server's clock in µs
-- when that is greater. A record that is absent (expired, evicted, deleted)
-- loads with seq 0, so its first number is the clock: above every number the
-- lost record handed out, which never ran ahead of the clock by more than
-- the few it handed out in its last µs. ARCHITECTURE.md ("Redis") states
-- the bound, also across a failover.
local function next_number(r)
  set(r, 'seq', math.max(r.seq + 1, now_us()))
  return r.seq
end

local function new_generation(r)
  set(r, 'gen', next_number(r))
end

local function bucket_index(now)
  return math.floor(math.floor(now / 1000) / P.width)
end

-- window_add counts one outcome in the current bucket, recycling the ring
-- slot when it still holds an older bucket.
local function window_add(r, now, failed)
  local idx = bucket_index(now)
  local slot = idx % BUCKETS
  local w, c, f = 'w' .. slot, 'c' .. slot, 'f' .. slot
  if r[w] ~= idx then
    set(r, w, idx)
    set(r, c, 0)
    set(r, f, 0)
  end
  set(r, c, (r[c] or 0) + 1)
  if failed then
    set(r, f, (r[f] or 0) + 1)
  end
end

-- window_counts sums the current bucket and the nine before it.
local function window_counts(r, now)
  local idx = bucket_index(now)
  local calls, failed = 0, 0
  for slot = 0, BUCKETS - 1 do
    local w, c = r['w' .. slot], r['c' .. slot] or 0
    if c > 0 and w and w > idx - BUCKETS and w <= idx then
      calls = calls + c
      failed = failed + (r['f' .. slot] or 0)
    end
  end
  return calls, failed
end

-- window_trips is the window's rules after a failure was added: at least
-- WindowMinCalls outcomes and either WindowFailures failures or a failure
-- share of WindowFailureRate (each off at 0).
local function window_trips(r, now)
  local calls, failed = window_counts(r, now)
  if calls < P.min_calls then
    return false
  end
  if P.window_failures > 0 and failed >= P.window_failures then
    return true
  end
  return P.rate > 0 and failed >= P.rate * calls
end

local function window_reset(r)
  for slot = 0, BUCKETS - 1 do
    if (r['c' .. slot] or 0) > 0 then
      set(r, 'c' .. slot, 0)
      set(r, 'f' .. slot, 0)
    end
  end
end

-- A rule every script keeps: it never touches a key again after a command
-- that may have deleted it. Redis deletes a sorted set once its last member
-- goes (ZREM, ZREMRANGEBYSCORE, DEL), and while the source's slot migrates
-- the node answers a script's access to a key it no longer has by stopping
-- the script there, after its earlier writes took effect: an operation half
-- applied, which no retry may repeat. So a lease set is read first (ZCARD,
-- ZCOUNT, ZSCORE, ZRANGE), a new lease is added before old ones are pruned,
-- and a removal that may empty the set is the script's last touch of it.

-- lease_count is the probe leases in keys[2]: all of them, and how many of
-- those have expired (a lease is alive while now < expiry). It only reads.
local function lease_count(keys, now)
  local card = redis.call('ZCARD', keys[2])
  if card == 0 then
    return 0, 0
  end
  return card, redis.call('ZCOUNT', keys[2], '-inf', int(now))
end

-- open starts an Open phase of the given cooldown: new generation, counts and
-- window cleared, every lease forgotten.
local function open(r, keys, now, cooldown)
  set(r, 'st', OPEN)
  new_generation(r)
  set(r, 'cd', cooldown)
  set(r, 'ou', now + cooldown)
  set(r, 'cf', 0)
  set(r, 'ps', 0)
  if r.pf ~= 0 then
    set(r, 'pf', 0)
  end
  window_reset(r)
  redis.call('DEL', keys[2])
end

-- close ends a HalfOpen phase: new generation, cooldown back to the policy's.
local function close(r, keys)
  set(r, 'st', CLOSED)
  new_generation(r)
  set(r, 'cd', P.cooldown)
  set(r, 'ou', 0)
  set(r, 'cf', 0)
  set(r, 'ps', 0)
  if r.pf ~= 0 then
    set(r, 'pf', 0)
  end
  window_reset(r)
  redis.call('DEL', keys[2])
end

-- consecutive_trips is the consecutive-failure rule; a ConsecutiveFailures
-- of -1 (gate.Disabled) switches it off.
local function consecutive_trips(r)
  return P.failures > 0 and r.cf >= P.failures
end

-- probe_reset starts a HalfOpen phase's counts again.
local function probe_reset(r)
  set(r, 'ps', 0)
  if r.pf ~= 0 then
    set(r, 'pf', 0)
  end
end

-- phase_full reports whether a HalfOpen phase has granted every probe
-- HalfOpenCalls allows: leases in flight plus outcomes so far.
local function phase_full(r, inflight)
  return P.half_open_calls > 0 and inflight + r.ps + r.pf >= P.half_open_calls
end

-- tolerates_probe_failure reports whether one more probe failure still
-- leaves SuccessThreshold reachable within HalfOpenCalls.
local function tolerates_probe_failure(r)
  return P.half_open_calls > 0 and r.pf + 1 <= P.half_open_calls - P.successes
end

-- grown is the cooldown after a failed probe: multiplied, rounded to the
-- nearest µs (a whole product such as 330ms × 2.3 must not lose a µs to
-- float noise; gate/memory computes it the same way), capped.
local function grown(cooldown)
  return math.min(math.floor(cooldown * P.multiplier + 0.5), P.max_cooldown)
end

-- body --
