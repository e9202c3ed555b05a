-- fast.lua: the breaker's fast paths, a prelude after clock.lua of
-- try_enter.lua, record.lua, admit.lua and conclude.lua. The common case —
-- a Closed record whose TTL needs no refresh, or no record at all — is
-- decided here from four or five fields read with one HMGET, without the
-- state machine (common.lua), whose definitions alone cost more than the
-- decision. Each function returns its operation's reply, or nil when the
-- state machine must decide: it then reads the record again and decides as
-- if the fast path did not exist. ARGV is the operation's, the policy
-- first (common.lua): ARGV[1] the key TTL in ms.

-- fresh reports whether a Closed record's fields say its TTL needs no
-- refresh: forced Closed (no TTL), more than half of the TTL left, or no
-- record at all (cf: the consecutive failures field, when read).
local function fresh(st, gen, fo, x, cf, ttl_ms)
  return tonumber(fo) == 2 or (x and tonumber(x) - now_us() >= tonumber(ttl_ms) * 500)
    or not (st or gen or fo or x or cf)
end

-- try_enter_fast is TryEnter's reply when the record is Closed and fresh:
-- allowed, nothing written.
local function try_enter_fast(keys, argv)
  local rec = redis.call('HMGET', keys[1], 'st', 'gen', 'fo', 'x')
  if (tonumber(rec[1]) or 0) == 0 and fresh(rec[1], rec[2], rec[3], rec[4], nil, argv[1]) then
    local gen = tonumber(rec[2]) or 0
    return { 1, 0, 0, 0, gen, gen, tonumber(rec[3]) or 0 }
  end
  return nil
end

-- RECORD_FAST_FIELDS are what record_fast reads of the record.
local RECORD_FAST_FIELDS = { 'st', 'gen', 'fo', 'x', 'cf' }

-- record_fast is Record's reply for a Success or Released of the current
-- Closed generation's admission (not a probe) that changes nothing: no
-- failures to reset, no window to count (width 0), a fresh record. argv is
-- record.lua's: ARGV[4] outcome, [5] allowed, [6] probe, [7] token. rec is
-- the record's RECORD_FAST_FIELDS when already read (nil: read here, only
-- for an outcome that may qualify); the second result is rec as read, for
-- the next outcome of a run (conclude.lua) while nothing was written.
local function record_fast(keys, argv, rec)
  local outcome = argv[4]
  if not (outcome == '4' or (outcome == '1' and argv[2] == '0')) or argv[5] ~= '1' or argv[6] ~= '0' then
    return nil, rec
  end
  rec = rec or redis.call('HMGET', keys[1], unpack(RECORD_FAST_FIELDS))
  local gen = tonumber(rec[2]) or 0
  if (tonumber(rec[1]) or 0) == 0 and tonumber(argv[7]) == gen
      and (outcome == '4' or (tonumber(rec[5]) or 0) == 0)
      and fresh(rec[1], rec[2], rec[3], rec[4], rec[5], argv[1]) then
    return { 1, 0, 0, gen, tonumber(rec[3]) or 0 }, rec
  end
  return nil, rec
end
