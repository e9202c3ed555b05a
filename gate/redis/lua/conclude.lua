-- conclude.lua: an admission's outcome, breaker Record and quota Finish, in
-- one script. The Go side loads common.lua and quota_common.lua, then
-- record.lua's body as the function record_body(KEYS, ARGV), then this file.
-- KEYS[1] record hash, KEYS[2] probe lease set (common.lua),
-- KEYS[3] bucket hash, KEYS[4] in-flight lease set (quota_common.lua); all
-- under the source's one hash tag.
-- ARGV[1..NPOLICY+4]  record.lua's arguments
-- ARGV[NPOLICY+5..7]  TPM drain, unit, capacity
-- ARGV[NPOLICY+8]     TPM correction in tokens ('': no settlement)
-- ARGV[NPOLICY+9]     permit ID, the in-flight lease ('': none to free)
-- Reply: record.lua's five integers.
local reply = record_body(KEYS, ARGV)
local b = NPOLICY + 4
if ARGV[b + 4] ~= '' then
  settle(KEYS[3], tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4]))
end
if ARGV[b + 5] ~= '' then
  redis.call('ZREM', KEYS[4], ARGV[b + 5])
end
return reply
