-- budget.lua: the advertised budget of one source (gate.BudgetGate), in one
-- script with three operations. Its preludes are quota_common.lua (for
-- int and now_us) and budget_common.lua (the record and the take rules).
-- KEYS[1] <prefix>:{<scope>:<source>}:advertised, a hash (budget_common.lua)
-- ARGV[1] 'take'    ARGV[2] estimated tokens
--         Reply {allowed 0|1, retry_after µs, limit 0 none|1 requests|2 tokens}
-- ARGV[1] 'refresh' ARGV[2..4] requests limit, remaining, reset µs;
--         ARGV[5..7] tokens limit, remaining, reset µs (-1: unknown)
--         Reply 1
-- ARGV[1] 'read'    Reply {exists 0|1, rl, rr, reset µs, tl, tr, reset µs}
local op = ARGV[1]
local B = budget_load(KEYS[1])
local now, req, tok = B.now, B.req, B.tok

if op == 'take' then
  local est = tonumber(ARGV[2])
  local no = budget_check(B, est)
  if no then
    return no
  end
  budget_take(B, est)
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
      w.left = math.max(remaining - math.max(B.blind - 1, 0), 0)
    elseif remaining < w.left then
      w.left = remaining
    end
    w.e = math.max(w.e, e)
  end
  refresh(req, tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
  refresh(tok, tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]))
  if budget_known(B) then
    B.blind = 0
  end
  budget_save(B)
  return 1
end

-- read
if not budget_known(B) and req.limit < 0 and tok.limit < 0 then
  return { 0, -1, -1, 0, -1, -1, 0 }
end
local function left_us(w)
  if w.e > 0 then
    return w.e - now
  end
  return 0
end
return { 1, req.limit, req.left, left_us(req), tok.limit, tok.left, left_us(tok) }
