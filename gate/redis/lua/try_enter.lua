-- try_enter.lua: TryEnter(source).
-- KEYS[1] record hash, KEYS[2] probe lease set (see common.lua).
-- ARGV[1..NPOLICY] policy (see common.lua), then
--   ARGV[NPOLICY+1] optional: the request's nonce, a decimal other than 0.
--     A probe lease granted to a request with a nonce is noted in the
--     record (pn: the nonce, pt: the lease's token), so that a caller whose
--     reply was lost can free it with probe_forget.lua.
-- Reply: {allowed 0|1, state, retry_after µs, probe 0|1, token, generation,
--         forced 0 none|1 open|2 closed} — generation and override as they
--         stand once the decision is made (gate/doc.go "Generations").
local now = now_us()
local r = load(KEYS[1])
local cleared = false

if r.st == CLOSED then
  save(r, KEYS) -- keeps the TTL: the admitted call outlives no record
  return { 1, CLOSED, 0, 0, r.gen, r.gen, r.fo }
end

if r.st == OPEN then
  if r.fo == FORCE_OPEN then
    -- Forced Open has no end: no certain wait (gate.Forcer).
    return { 0, OPEN, 0, 0, 0, r.gen, r.fo }
  end
  if now < r.ou then
    return { 0, OPEN, r.ou - now, 0, 0, r.gen, r.fo }
  end
  -- The first TryEnter at or after openUntil moves to HalfOpen; the new
  -- phase forgets every lease of an earlier one.
  set(r, 'st', HALF_OPEN)
  new_generation(r)
  probe_reset(r)
  cleared = true
end

-- The set is read before anything is removed from it, and the new lease is
-- added before old ones go, so the script never touches a set it emptied
-- (see common.lua).
local card, expired = lease_count(KEYS, now)
local stale
if cleared and card > 0 then
  stale = redis.call('ZRANGE', KEYS[2], 0, -1)
  expired = card
end
local inflight = card - expired
if inflight >= P.probes or phase_full(r, inflight) then
  if expired > 0 then
    -- Live leases remain (inflight ≥ 1), so the set stays.
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', int(now))
  end
  save(r, KEYS)
  -- A probe is in flight and may answer at any moment: no certain wait,
  -- never the lease length.
  return { 0, HALF_OPEN, 0, 0, 0, r.gen, r.fo }
end
local token = next_number(r)
redis.call('ZADD', KEYS[2], int(now + P.probe_ttl), int(token))
local nonce = ARGV[NPOLICY + 1]
if nonce and nonce ~= '' and nonce ~= '0' then
  redis.call('HSET', KEYS[1], 'pn', nonce, 'pt', int(token))
end
if stale then
  redis.call('ZREM', KEYS[2], unpack(stale))
elseif expired > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', int(now))
end
-- The lease set lives as long as the record; every lease ends within
-- ProbeTTL, well inside it.
redis.call('PEXPIRE', KEYS[2], int(P.ttl))
save(r, KEYS)
return { 1, HALF_OPEN, 0, 1, token, r.gen, r.fo }
