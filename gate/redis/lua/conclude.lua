-- conclude.lua: an admission's outcome, breaker Record and quota Finish, in
-- one script. The Go side loads clock.lua and quota_common.lua, then
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
-- The fast path: a Success or Released of a current Closed admission that
-- changes nothing — no failures to reset, no window to count (width 0) —
-- and finds a TTL that needs no refresh (or no record at all) writes
-- nothing to the record, so it is decided from five fields here, without
-- running the state machine. Anything else goes to record_body, which reads
-- the record again and decides as record.lua does.
local reply
do
  local outcome = ARGV[4]
  local rec = redis.call('HMGET', KEYS[1], 'st', 'gen', 'fo', 'x', 'cf')
  local st, gen, fo, x = tonumber(rec[1]) or 0, tonumber(rec[2]) or 0, tonumber(rec[3]) or 0, tonumber(rec[4])
  if (outcome == '4' or (outcome == '1' and ARGV[2] == '0' and (tonumber(rec[5]) or 0) == 0))
      and st == 0 and ARGV[5] == '1' and ARGV[6] == '0' and tonumber(ARGV[7]) == gen
      and (fo == 2 or (x and x - now_us() >= tonumber(ARGV[1]) * 500) or not (rec[1] or rec[2] or rec[3] or x or rec[5])) then
    reply = { 1, 0, 0, gen, fo }
  else
    reply = record_body(KEYS, ARGV)
  end
end
if ARGV[11] ~= '' then
  settle(KEYS[3], tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]))
end
if ARGV[12] ~= '' then
  redis.call('ZREM', KEYS[4], ARGV[12])
end
return reply
