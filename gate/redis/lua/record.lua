-- record.lua: Record(source, decision, outcome).
-- KEYS[1] record hash, KEYS[2] probe lease set (see common.lua).
-- ARGV[1..NPOLICY] policy (see common.lua), then
--   ARGV[NPOLICY+1] outcome: 1 Success, 2 Failure, 3 Fatal, 4 Released
--   ARGV[NPOLICY+2] decision allowed 0|1
--   ARGV[NPOLICY+3] decision probe 0|1
--   ARGV[NPOLICY+4] decision token (decimal)
-- Reply: {applied 0|1, state after, retry_after µs, generation after,
--         forced 0 none|1 open|2 closed}.
local SUCCESS, FAILURE, FATAL, RELEASED = 1, 2, 3, 4
local outcome = tonumber(ARGV[NPOLICY + 1])
local allowed = ARGV[NPOLICY + 2] == '1'
local probe = ARGV[NPOLICY + 3] == '1'
local token = ARGV[NPOLICY + 4]

local now = now_us()
local r = load(KEYS[1])

local function reply(applied)
  save(r, KEYS)
  return { applied and 1 or 0, r.st, remaining(r, now), r.gen, r.fo }
end

-- A decision that was not allowed never ran: always a miss, even Fatal.
-- Under a forced Open every outcome is a miss (gate.Forcer).
if not allowed or r.fo == FORCE_OPEN then
  return reply(false)
end
-- Under a forced Closed a Fatal is counted as a Failure and trips nothing.
if outcome == FATAL and r.fo == FORCE_CLOSED then
  outcome = FAILURE
end

-- Fatal opens at once from any state, even for a stale decision: a bad
-- credential is bad whenever the call was admitted.
if outcome == FATAL then
  if r.st == CLOSED then
    open(r, KEYS, now, r.cd)
  elseif r.st == HALF_OPEN then
    open(r, KEYS, now, grown(r.cd))
  elseif now + r.cd > r.ou then
    set(r, 'ou', now + r.cd)
  end
  return reply(true)
end

-- Fencing: a Closed admission of the current generation, or a probe whose
-- lease still exists and has not expired. Expired leases are left for
-- TryEnter to prune: the probe set is touched here at most twice, a read
-- and then one removal (see common.lua's rule).
local current
if probe then
  local expiry = r.st == HALF_OPEN and redis.call('ZSCORE', KEYS[2], token)
  current = expiry and now < tonumber(expiry) or false
else
  current = r.st == CLOSED and tonumber(token) == r.gen
end
if not current then
  return reply(false)
end

if r.st == CLOSED then
  if outcome == SUCCESS then
    if r.cf ~= 0 then
      set(r, 'cf', 0)
    end
    if P.width > 0 then
      window_add(r, now, false)
    end
  elseif outcome == FAILURE then
    set(r, 'cf', r.cf + 1)
    local trips = consecutive_trips(r)
    if P.width > 0 then
      window_add(r, now, true)
      if not trips then
        trips = window_trips(r, now)
      end
    end
    if trips and r.fo ~= FORCE_CLOSED then
      open(r, KEYS, now, r.cd)
    end
  end
  return reply(true)
end

-- HalfOpen, current probe. Closing or opening forgets every lease, this
-- one included, so only the other outcomes remove it on its own.
if outcome == SUCCESS then
  set(r, 'ps', r.ps + 1)
  if r.ps >= P.successes then
    close(r, KEYS)
  else
    redis.call('ZREM', KEYS[2], token)
  end
elseif outcome == FAILURE and tolerates_probe_failure(r) then
  redis.call('ZREM', KEYS[2], token)
  set(r, 'pf', r.pf + 1)
elseif outcome == FAILURE then
  open(r, KEYS, now, grown(r.cd))
else -- Released
  redis.call('ZREM', KEYS[2], token)
end
return reply(true)
