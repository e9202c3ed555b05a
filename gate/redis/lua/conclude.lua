-- conclude.lua: an admission's outcome, breaker Record and quota Finish, in
-- one script. The Go side loads clock.lua, fast.lua and quota_common.lua, then
-- common.lua with record.lua's body as the function record_body(KEYS,
-- ARGV) (run only off the fast path below), then this file.
-- KEYS[1] record hash, KEYS[2] probe lease set (common.lua),
-- KEYS[3] bucket hash, KEYS[4] in-flight lease set (quota_common.lua); all
-- under the source's one hash tag.
-- ARGV[1..7]   record.lua's arguments (the policy's three, then outcome,
--              allowed, probe, token)
-- ARGV[8..10]  TPM drain, unit, capacity
-- ARGV[11]     TPM correction in tokens ('': no settlement)
-- ARGV[12]     permit ID, the in-flight lease ('': none to free)
-- Reply: record.lua's five integers.
--
-- The fast path (fast.lua) decides a Success or Released that changes
-- nothing without the state machine; anything else goes to record_body,
-- which reads the record again and decides as record.lua does.
local reply = record_fast(KEYS, ARGV) or record_body(KEYS, ARGV)
if ARGV[11] ~= '' then
  settle(KEYS[3], tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]))
end
if ARGV[12] ~= '' then
  redis.call('ZREM', KEYS[4], ARGV[12])
end
return reply
