-- admit.lua: TryEnter and, when it allows, quota Acquire, in one script.
-- The Go side loads common.lua and quota_common.lua, then try_enter.lua's
-- body as the function try_enter_body(KEYS, ARGV) and quota_acquire.lua's
-- as acquire_body(KEYS, ARGV), then this file: each body runs unchanged on
-- the keys and arguments it would get as a script of its own.
-- KEYS[1] record hash, KEYS[2] probe lease set (common.lua),
-- KEYS[3] bucket hash, KEYS[4] in-flight lease set (quota_common.lua); all
-- under the source's one hash tag.
-- ARGV: try_enter.lua's arguments, then quota_acquire.lua's ten as the last
-- ten.
-- Reply: try_enter.lua's seven integers, then quota_acquire.lua's three
-- (all 0 when the breaker rejected: the quota was not asked).
local d = try_enter_body({ KEYS[1], KEYS[2] }, ARGV)
if d[1] == 0 then
  return { d[1], d[2], d[3], d[4], d[5], d[6], d[7], 0, 0, 0 }
end
local n = #ARGV
local q = acquire_body({ KEYS[3], KEYS[4] }, { unpack(ARGV, n - 9, n) })
if q[1] == 0 and d[4] == 1 then
  -- The quota rejected a probe: given back as Record(Released) would, the
  -- lease freed and nothing else changed.
  redis.call('ZREM', KEYS[2], int(d[5]))
end
return { d[1], d[2], d[3], d[4], d[5], d[6], d[7], q[1], q[2], q[3] }
