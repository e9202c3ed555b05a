-- force.lua: Forcer.Force(source, f), an operator's override (gate.Forcer).
-- KEYS[1] record hash, KEYS[2] probe lease set (see common.lua).
-- ARGV[1..NPOLICY] policy (see common.lua), then
--   ARGV[NPOLICY+1] force: 0 none (reset), 1 open, 2 closed, 3 half-open
--   (a one-off move to a fresh HalfOpen phase; no override is held)
-- Reply: the generation the Force started.
-- Every Force is a transition: a new generation (seq keeps growing, so
-- decisions granted before it stay fenced), counts, window and leases
-- cleared. A forced Open has no end (ou 0: RetryAfter 0); forced Closed and
-- the reset start a fresh Closed record with the policy's cooldown. The only
-- ARGV of the policy this script uses is the key TTL (11), on reset. A forced
-- record keeps no TTL until it is reset, which gives the TTL back.
local f = tonumber(ARGV[NPOLICY + 1])
local r = load(KEYS[1])
-- Half-open is a one-off move, not a held override.
local FORCE_HALF_OPEN = 3
local half_open = f == FORCE_HALF_OPEN
if half_open then
  f = FORCE_NONE
end

new_generation(r)
set(r, 'fo', f)
set(r, 'cf', 0)
probe_reset(r)
set(r, 'ou', 0)
window_reset(r)
redis.call('DEL', KEYS[2])
if f == FORCE_OPEN then
  set(r, 'st', OPEN) -- the cooldown stays for after the release
elseif half_open then
  set(r, 'st', HALF_OPEN) -- the cooldown stays: a failed probe grows it
else
  set(r, 'st', CLOSED)
end
r.refresh = true -- a reset gives the full TTL back
save(r, KEYS)
if f ~= FORCE_OPEN and not half_open then
  -- Back to the policy's cooldown. The field is dropped rather than set, so
  -- the next script reads the cooldown of its own policy: an operator tool
  -- that forces without knowing the deployment's policy sets none.
  redis.call('HDEL', KEYS[1], 'cd')
end
if f ~= FORCE_NONE then
  redis.call('PERSIST', KEYS[1])
end
return r.gen
