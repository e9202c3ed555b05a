-- conclude_run.lua: a run of one source's outcomes, each a Success or
-- Released of an allowed admission that was not a probe, concluded in one
-- script: for each in order what conclude.lua does, with the quota's
-- settlements and lease releases gathered into one write each. The Go side
-- loads clock.lua, fast.lua and quota_common.lua, then common.lua with
-- record.lua's body as the function record_body(KEYS, ARGV) (run only for an
-- outcome the fast path does not decide), then this file.
--
-- Such an outcome never opens or closes the breaker, so no part of the run
-- deletes the probe lease set, and a later part never touches a key an
-- earlier one deleted (common.lua's rule): the Go side sends anything else
-- through conclude.lua, on its own.
--
-- KEYS as conclude.lua's.
-- ARGV[1..3]  the policy (common.lua)
-- ARGV[4..6]  TPM drain, unit, capacity
-- then four per outcome: outcome (1 Success, 4 Released), the decision's
--             token, TPM correction in tokens ('': none), permit ID ('':
--             no lease to free)
-- Reply: record.lua's five integers per outcome, in order.
local n = (#ARGV - 6) / 4
local argv = { ARGV[1], ARGV[2], ARGV[3], '', '1', '0', '' }
local reply, deltas, ids = {}, {}, {}
local rec -- the record as read, while nothing has been written to it
for i = 0, n - 1 do
  local at = 7 + 4 * i
  argv[4], argv[7] = ARGV[at], ARGV[at + 1]
  local r
  r, rec = record_fast(KEYS, argv, rec)
  if not r then
    r, rec = record_body(KEYS, argv), nil
  end
  for j = 1, 5 do
    reply[#reply + 1] = r[j]
  end
  if ARGV[at + 2] ~= '' then
    deltas[#deltas + 1] = tonumber(ARGV[at + 2])
  end
  if ARGV[at + 3] ~= '' then
    ids[#ids + 1] = ARGV[at + 3]
  end
end
if #deltas > 0 then
  settle(KEYS[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), table.remove(deltas, 1), deltas)
end
if #ids > 0 then
  redis.call('ZREM', KEYS[4], unpack(ids))
end
return reply
