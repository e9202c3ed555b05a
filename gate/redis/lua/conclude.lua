-- conclude.lua: admissions' outcomes, each its breaker Record and its quota
-- Finish, in one script: one outcome, or a run of one source's outcomes
-- concluded together. The Go side loads clock.lua, fast.lua and
-- quota_common.lua, then common.lua with record.lua's body as the function
-- record_body(KEYS, ARGV) (run only off the fast path below), then this
-- file.
-- KEYS[1] record hash, KEYS[2] probe lease set (common.lua),
-- KEYS[3] bucket hash, KEYS[4] in-flight lease set (quota_common.lua); all
-- under the source's one hash tag.
-- ARGV[1..3]  the policy (common.lua)
-- ARGV[4..6]  TPM drain, unit, capacity
-- then six per outcome: record.lua's outcome, allowed, probe and token
--             arguments, the TPM correction in tokens ('': no settlement)
--             and the permit ID, the in-flight lease ('': none to free)
-- Reply: record.lua's five integers per outcome, in order.
--
-- Each outcome is concluded in order as Record then Finish would: the fast
-- path (fast.lua) decides a Success or Released that changes nothing
-- without the state machine, and anything else goes to record_body, which
-- reads the record again and decides as record.lua does. The quota's
-- settlements and lease releases are gathered into one write each.
--
-- Several outcomes in one call (a run) are each a Success or Released of an
-- allowed admission that was not a probe. Such an outcome never opens or
-- closes the breaker, so no part of a run deletes the probe lease set, and a
-- later part never touches a key an earlier one deleted (common.lua's rule):
-- the Go side sends any other outcome alone. Every conclusion, alone or in a
-- run, goes through this one script, so that a server that lost its scripts
-- answers NOSCRIPT to every call of a source in a pipeline from the first
-- it refused on, and the calls run again in their order.
local n = (#ARGV - 6) / 6
local argv = { ARGV[1], ARGV[2], ARGV[3], '', '', '', '' }
local reply, deltas, ids = {}, {}, {}
local rec -- the record as read, while nothing has been written to it
for i = 0, n - 1 do
  local at = 7 + 6 * i
  argv[4], argv[5], argv[6], argv[7] = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3]
  local r
  r, rec = record_fast(KEYS, argv, rec)
  if not r then
    r, rec = record_body(KEYS, argv), nil
  end
  for j = 1, 5 do
    reply[#reply + 1] = r[j]
  end
  if ARGV[at + 4] ~= '' then
    deltas[#deltas + 1] = tonumber(ARGV[at + 4])
  end
  if ARGV[at + 5] ~= '' then
    ids[#ids + 1] = ARGV[at + 5]
  end
end
if #deltas > 0 then
  settle(KEYS[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), table.remove(deltas, 1), deltas)
end
if #ids > 0 then
  redis.call('ZREM', KEYS[4], unpack(ids))
end
return reply
