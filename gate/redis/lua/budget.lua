-- budget.lua: the advertised budget of one source (gate.BudgetGate), in one
-- script with three operations. It has no prelude: the budget shares no
-- code with the breaker or the quota.
-- KEYS[1] <prefix>:{<scope>:<source>}:advertised, a hash; per window (r:
-- requests, t: tokens) five fields, times in server µs:
--   ?l limit (-1 unknown)    ?r remaining budget (-1 unknown)
--   ?e reset instant (0: passed, next unknown)
--   ?p the reset last passed  ?s the longest reset seen (the window's length)
--   n  admissions made while nothing was known (the first answer may not
--      count them yet); the key then lives a minute
-- ARGV[1] 'take'    ARGV[2] estimated tokens
--         Reply {allowed 0|1, retry_after µs, limit 0 none|1 requests|2 tokens}
-- ARGV[1] 'refresh' ARGV[2..4] requests limit, remaining, reset µs;
--         ARGV[5..7] tokens limit, remaining, reset µs (-1: unknown)
--         Reply 1
-- ARGV[1] 'read'    Reply {exists 0|1, rl, rr, reset µs, tl, tr, reset µs}
-- The rules are those of gate/memory/budget.go, to the µs.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local op = ARGV[1]

local function int(n)
  return string.format('%d', n)
end

local raw = redis.call('HMGET', KEYS[1], 'rl', 'rr', 're', 'rp', 'rs', 'tl', 'tr', 'te', 'tp', 'ts', 'n')
local blind = tonumber(raw[11]) or 0
local function win(off)
  return {
    limit = tonumber(raw[off]) or -1, left = tonumber(raw[off + 1]) or -1,
    e = tonumber(raw[off + 2]) or 0, p = tonumber(raw[off + 3]) or 0, s = tonumber(raw[off + 4]) or 0,
  }
end
local req, tok = win(1), win(6)

local function roll(w)
  if w.e > 0 and now >= w.e then
    w.left, w.p, w.e = w.limit, w.e, 0
  end
end

local function known()
  return req.left >= 0 or tok.left >= 0
end

local function save()
  local ttl = 1000000
  for _, w in ipairs({ req, tok }) do
    ttl = math.max(ttl, math.max(w.e - now, 0) + math.max(w.s, 1000000) + 1000000)
  end
  redis.call('HSET', KEYS[1],
    'rl', int(req.limit), 'rr', int(req.left), 're', int(req.e), 'rp', int(req.p), 'rs', int(req.s),
    'tl', int(tok.limit), 'tr', int(tok.left), 'te', int(tok.e), 'tp', int(tok.p), 'ts', int(tok.s),
    'n', int(blind))
  if blind > 0 then
    ttl = math.max(ttl, 60000000)
  end
  -- One window past the last reset known: the limit must outlive the reset
  -- (the budget is the limit again then), and an idle source's figures go.
  redis.call('PEXPIRE', KEYS[1], int(math.ceil(ttl / 1000)))
end

roll(req)
roll(tok)

if op == 'take' then
  if not known() then
    blind = blind + 1
    save()
    return { 1, 0, 0 }
  end
  local est = tonumber(ARGV[2])
  local function short(w, cost)
    if w.left < 0 then
      return false
    end
    if w.limit >= 0 then
      cost = math.min(cost, w.limit)
    end
    return w.left < cost
  end
  for i, c in ipairs({ { req, 1 }, { tok, est } }) do
    local w = c[1]
    if short(w, c[2]) then
      local ra = 0
      if w.e > 0 then
        ra = w.e - now
      end
      return { 0, ra, i }
    end
  end
  if req.left >= 0 then
    req.left = req.left - 1
  end
  if tok.left >= 0 then
    tok.left = math.max(tok.left - est, 0)
  end
  save()
  return { 1, 0, 0 }
end

if op == 'refresh' then
  local function refresh(w, limit, remaining, reset)
    if limit >= 0 then
      w.limit = limit
    end
    if remaining < 0 then
      return
    end
    local e = now + math.max(reset, 1)
    if w.e == 0 and w.p > 0 and e <= w.p + math.floor(w.s / 2) then
      return -- a late answer of the window that just ended
    end
    w.s = math.max(w.s, e - now)
    if w.left < 0 then
      -- The first figure: the answer counts its own call, perhaps not the
      -- other blind ones still in flight.
      w.left = math.max(remaining - math.max(blind - 1, 0), 0)
    elseif remaining < w.left then
      w.left = remaining
    end
    w.e = math.max(w.e, e)
  end
  refresh(req, tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
  refresh(tok, tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]))
  if known() then
    blind = 0
  end
  save()
  return 1
end

-- read
if not known() and req.limit < 0 and tok.limit < 0 then
  return { 0, -1, -1, 0, -1, -1, 0 }
end
local function left_us(w)
  if w.e > 0 then
    return w.e - now
  end
  return 0
end
return { 1, req.limit, req.left, left_us(req), tok.limit, tok.left, left_us(tok) }
