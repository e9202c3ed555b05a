-- probe_forget.lua: frees the probe lease a TryEnter (or Admit) granted to
-- a request whose reply its caller gave up on: the script ran, its reply
-- was lost, and the lease would hold the source's probe until ProbeTTL.
-- KEYS[1] record hash, KEYS[2] probe lease set (see common.lua).
-- ARGV[1] the request's nonce (try_enter.lua).
-- Reply: 1 when a lease was freed, else 0 (another request was granted the
-- latest lease, or none was granted, or it was given back already).
local v = redis.call('HMGET', KEYS[1], 'pn', 'pt')
if v[1] ~= ARGV[1] or not v[2] then
  return 0
end
redis.call('HDEL', KEYS[1], 'pn', 'pt')
-- Freed as Record(Released) frees a probe; the set's last touch.
return redis.call('ZREM', KEYS[2], v[2])
