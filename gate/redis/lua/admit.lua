-- admit.lua: TryEnter and, when it allows, quota Acquire and (with a fifth
-- key) the advertised budget's take, all or nothing, in one script. The Go
-- side loads clock.lua, fast.lua and quota_common.lua, then budget_common.lua as the
-- function budget_lib() (defined only when a budget is asked), then
-- common.lua with try_enter.lua's body as the function try_enter_body(KEYS,
-- ARGV) (run only off the fast path below), then this file.
-- KEYS[1] record hash, KEYS[2] probe lease set (common.lua),
-- KEYS[3] bucket hash, KEYS[4] in-flight lease set (quota_common.lua),
-- KEYS[5] optional: the advertised budget (budget_common.lua); all under
-- the source's one hash tag.
-- ARGV[1..3] the policy (common.lua), then quota_acquire.lua's ten
-- arguments (the rates all 0 for a source without limits; its estimated
-- tokens are also the budget's), then ARGV[14] optional: try_enter.lua's
-- nonce.
-- Reply: try_enter.lua's seven integers, then {allowed 0|1, retry_after µs,
-- limit}: limit 1 rpm, 2 tpm, 3 in_flight as quota_acquire.lua's, or 4
-- advertised requests, 5 advertised tokens when the budget rejected (all 0
-- when the breaker rejected: nothing else was asked).
--
-- The fast path (fast.lua) decides a Closed record without the state
-- machine; anything else goes to try_enter_body, which reads the record
-- again and decides as try_enter.lua does.
local d = try_enter_fast(KEYS, ARGV) or try_enter_body(KEYS, { ARGV[1], ARGV[2], ARGV[3], ARGV[14] })
if d[1] == 0 then
  return { d[1], d[2], d[3], d[4], d[5], d[6], d[7], 0, 0, 0 }
end
local function refuse(wait, limit)
  if d[4] == 1 then
    -- A rejected probe is given back as Record(Released) would: the lease
    -- freed and nothing else changed.
    redis.call('ZREM', KEYS[2], int(d[5]))
  end
  return { d[1], d[2], d[3], d[4], d[5], d[6], d[7], 0, wait, limit }
end
local q = acquire(KEYS[3], KEYS[4], ARGV, 3) -- after the policy's NPOLICY = 3
if not q.ok then
  return refuse(q.wait, q.limit)
end
local B, budget
if KEYS[5] then
  budget = budget_lib()
  B = budget.load(KEYS[5])
  local no = budget.check(B, q.est)
  if no then
    return refuse(no[2], no[3] + 3)
  end
end
commit_acquire(KEYS[3], KEYS[4], q)
if B then
  budget.take(B, q.est)
end
return { d[1], d[2], d[3], d[4], d[5], d[6], d[7], 1, 0, 0 }
