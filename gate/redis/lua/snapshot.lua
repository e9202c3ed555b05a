-- snapshot.lua: Snapshot(source). Reads only; moves nothing.
-- KEYS[1] record hash, KEYS[2] probe lease set (see common.lua).
-- ARGV[1..NPOLICY] policy (see common.lua); nothing else.
-- Reply: {state, generation, consecutive failures, probe successes,
--         window calls, window failures, probes in flight, cooldown µs,
--         openUntil µs (0 unless Open with an end), retry_after µs,
--         forced 0 none|1 open|2 closed, probe failures}.
local now = now_us()
local r = load(KEYS[1])
local calls, failed, inflight, open_until = 0, 0, 0, 0
if r.st == CLOSED and P.width > 0 then
  calls, failed = window_counts(r, now)
elseif r.st == HALF_OPEN then
  inflight = redis.call('ZCOUNT', KEYS[2], '(' .. int(now), '+inf')
elseif r.st == OPEN then
  open_until = r.ou
end
return { r.st, r.gen, r.cf, r.ps, calls, failed, inflight, r.cd, open_until, remaining(r, now), r.fo, r.pf }
