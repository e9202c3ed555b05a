-- budget_common.lua: the advertised budget's record and rules (the prelude
-- of budget.lua, and of admit.lua, which takes the budget with the breaker
-- and the quota). It calls now_us, which quota_common.lua defines.
-- Key: <prefix>:{<scope>:<source>}:advertised, a hash; per window (r:
-- requests, t: tokens) five fields, times in server µs:
--   ?l limit (-1 unknown)    ?r remaining budget (-1 unknown)
--   ?e reset instant (0: passed, next unknown)
--   ?p the reset last passed  ?s the longest reset seen (the window's length)
--   n  admissions made while nothing was known (the first answer may not
--      count them yet); the key then lives a minute
-- The rules are those of gate/memory/budget.go, to the µs.

-- budget_load reads the budget at key and rolls each window whose reset
-- has passed (in the table only: budget_save writes).
local function budget_load(key)
  local raw = redis.call('HMGET', key, 'rl', 'rr', 're', 'rp', 'rs', 'tl', 'tr', 'te', 'tp', 'ts', 'n')
  local function win(off)
    return {
      limit = tonumber(raw[off]) or -1, left = tonumber(raw[off + 1]) or -1,
      e = tonumber(raw[off + 2]) or 0, p = tonumber(raw[off + 3]) or 0, s = tonumber(raw[off + 4]) or 0,
    }
  end
  local B = { key = key, now = now_us(), req = win(1), tok = win(6), blind = tonumber(raw[11]) or 0 }
  for _, w in ipairs({ B.req, B.tok }) do
    if w.e > 0 and B.now >= w.e then
      w.left, w.p, w.e = w.limit, w.e, 0
    end
  end
  return B
end

local function budget_known(B)
  return B.req.left >= 0 or B.tok.left >= 0
end

local function budget_save(B)
  local now = B.now
  local req, tok = B.req, B.tok
  local ttl = 1000000
  for _, w in ipairs({ req, tok }) do
    ttl = math.max(ttl, math.max(w.e - now, 0) + math.max(w.s, 1000000) + 1000000)
  end
  redis.call('HSET', B.key,
    'rl', int(req.limit), 'rr', int(req.left), 're', int(req.e), 'rp', int(req.p), 'rs', int(req.s),
    'tl', int(tok.limit), 'tr', int(tok.left), 'te', int(tok.e), 'tp', int(tok.p), 'ts', int(tok.s),
    'n', int(B.blind))
  if B.blind > 0 then
    ttl = math.max(ttl, 60000000)
  end
  -- One window past the last reset known: the limit must outlive the reset
  -- (the budget is the limit again then), and an idle source's figures go.
  redis.call('PEXPIRE', B.key, int(math.ceil(ttl / 1000)))
end

-- budget_check decides a take of one request and est tokens without
-- writing: nil when it fits, else {0, retry_after µs, limit 1 requests|2
-- tokens}. A budget that knows nothing always fits.
local function budget_check(B, est)
  if not budget_known(B) then
    return nil
  end
  local function short(w, cost)
    if w.left < 0 then
      return false
    end
    if w.limit >= 0 then
      cost = math.min(cost, w.limit)
    end
    return w.left < cost
  end
  for i, c in ipairs({ { B.req, 1 }, { B.tok, est } }) do
    local w = c[1]
    if short(w, c[2]) then
      local ra = 0
      if w.e > 0 then
        ra = w.e - B.now
      end
      return { 0, ra, i }
    end
  end
  return nil
end

-- budget_take writes a take budget_check let through.
local function budget_take(B, est)
  if not budget_known(B) then
    B.blind = B.blind + 1
  else
    if B.req.left >= 0 then
      B.req.left = B.req.left - 1
    end
    if B.tok.left >= 0 then
      B.tok.left = math.max(B.tok.left - est, 0)
    end
  end
  budget_save(B)
end
