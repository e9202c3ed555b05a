-- conclude_fast.lua: conclude.lua's common case, decided before anything
-- else of the script is defined. It is the first part of the conclusion
-- script; the preludes and conclude.lua follow it. What the writer sends
-- is, almost always, a run of Successes of a Closed breaker's current
-- admissions that change nothing in the record, with their TPM corrections
-- and in-flight leases to give back: this block concludes such a call and
-- returns. Anything else — one outcome that the record must count, a
-- record that is not Closed, current and fresh, a bucket whose unit
-- changed or whose TTL needs a refresh — it leaves, having written
-- nothing, to the rest of the script, which decides as if this block did
-- not exist. It saves the common case the definitions the rest of the
-- script starts with (see admit_fast.lua).
--
-- It writes exactly what the rest of the script writes in the same case:
--   * the breaker record: nothing (record_fast in fast.lua, for every
--     outcome);
--   * the bucket hash: the TPM level and stamp after every correction in
--     turn (quota_common.lua's settle), when there is one;
--   * the in-flight lease set: the removal of the leases given back.
-- Keys, arguments and reply are conclude.lua's.
do
  local n = (#ARGV - 6) / 6
  local windowless = ARGV[2] == '0'
  local fast = true
  for i = 0, n - 1 do
    local at = 7 + 6 * i
    local outcome = ARGV[at]
    -- As record_fast: a Released, or a Success with no window to count,
    -- of an allowed admission that was not a probe.
    if not (outcome == '4' or (outcome == '1' and windowless)) or ARGV[at + 1] ~= '1' or ARGV[at + 2] ~= '0' then
      fast = false
      break
    end
  end
  local rec = fast and redis.call('HMGET', KEYS[1], 'st', 'gen', 'fo', 'x', 'cf')
  if fast and (tonumber(rec[1]) or 0) == 0 then
    local st, gen, fo, x, cf = rec[1], rec[2], rec[3], rec[4], rec[5]
    local g, f = tonumber(gen) or 0, tonumber(fo) or 0
    local now
    local function clock()
      if not now then
        local t = redis.call('TIME')
        now = tonumber(t[1]) * 1000000 + tonumber(t[2])
      end
      return now
    end
    -- fresh, as fast.lua's: forced Closed, more than half of the TTL left,
    -- or no record at all.
    fast = f == 2 or (x and tonumber(x) - clock() >= tonumber(ARGV[1]) * 500) or not (st or gen or fo or x or cf)
    local failures = tonumber(cf) or 0
    local deltas, ids = {}, {}
    for i = 0, n - 1 do
      if not fast then
        break
      end
      local at = 7 + 6 * i
      -- The current generation's admission; a Success only with no
      -- failures to reset.
      fast = tonumber(ARGV[at + 3]) == g and (ARGV[at] == '4' or failures == 0)
      if ARGV[at + 4] ~= '' then
        deltas[#deltas + 1] = tonumber(ARGV[at + 4])
      end
      if ARGV[at + 5] ~= '' then
        ids[#ids + 1] = ARGV[at + 5]
      end
    end
    local level, stamp
    if fast and #deltas > 0 then
      -- settle, as quota_common.lua's, when it needs no refresh: the level
      -- brought to now, each correction in turn kept within [0, 2·capacity].
      local drain, unit, cap = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
      local raw = redis.call('HMGET', KEYS[3], 'tl', 'ts', 'tu', 'qx')
      if tonumber(raw[3]) ~= unit then
        fast = false
      else
        level, stamp = tonumber(raw[1]) or 0, tonumber(raw[2]) or 0
        local t = clock()
        if t > stamp then
          local gone = (t - stamp) * drain
          level, stamp = gone >= level and 0 or level - gone, t
        end
        for i = 1, #deltas do
          level = math.min(math.max(level + deltas[i] * unit, 0), 2 * cap)
        end
        local need = 0
        if drain > 0 and level > 0 then
          need = math.ceil(level / drain / 1000)
        end
        local qx = tonumber(raw[4])
        fast = qx ~= nil and qx >= t + (need + 1000) * 1000
      end
    end
    if fast then
      if level then
        redis.call('HSET', KEYS[3], 'tl', string.format('%d', level), 'ts', string.format('%d', stamp))
      end
      if #ids > 0 then
        redis.call('ZREM', KEYS[4], unpack(ids))
      end
      local reply = {}
      for i = 1, n do
        local j = 5 * (i - 1)
        reply[j + 1], reply[j + 2], reply[j + 3], reply[j + 4], reply[j + 5] = 1, 0, 0, g, f
      end
      return reply
    end
  end
end
