-- admit_fast.lua: admit.lua's common case, decided before anything else of
-- the script is defined. It is the first part of the admission script; the
-- preludes and admit.lua follow it. A governed call's admission is, almost
-- always, a Closed breaker whose record needs no TTL refresh and a quota
-- with room and nothing to refresh: this block decides that case with the
-- reads and writes it needs and returns. Anything else, it leaves alone
-- having written nothing, and the rest of the script decides as if this
-- block did not exist (it reads the record and the buckets again, and may
-- read the clock again: deciding a moment later is what a script sent a
-- moment later would do).
--
-- Why a block of its own: the rest of the script starts by defining the
-- state machine's and the buckets' functions, about twenty closures and
-- tables, whatever it then needs; on a server that idles between calls,
-- as it does for one caller, that costs about a quarter of the script's
-- time. Here the common case pays for none of it.
--
-- It writes exactly what the rest of the script would write in the same
-- case, field for field:
--   * the breaker record: nothing (try_enter_fast in fast.lua);
--   * the bucket hash: the levels and stamps of the limits the source has
--     (commit_acquire in quota_common.lua), and the lease set's expiry when
--     that set is refreshed, only when the hash's own TTL needs no refresh
--     and every limit's unit is stored already;
--   * the in-flight lease set: the new lease, only below MaxInFlight (at
--     the limit expired leases must be counted, which is the rest of the
--     script's work), and the set's TTL when it was empty or its expiry
--     falls short;
--   * the advertised budget, when the fifth key names it: the take, as
--     budget_common.lua's load, check, take and save write it, only when
--     the take fits.
-- Keys and arguments are admit.lua's.
do
  local rec = redis.call('HMGET', KEYS[1], 'st', 'gen', 'fo', 'x')
  local st, gen, fo, x = rec[1], rec[2], rec[3], rec[4]
  if (tonumber(st) or 0) == 0 then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    local forced = tonumber(fo)
    -- fresh, as fast.lua's: forced Closed, more than half of the TTL left,
    -- or no record at all.
    if forced == 2 or (x and tonumber(x) - now >= tonumber(ARGV[1]) * 500) or not (st or gen or fo or x) then
      local g, f = tonumber(gen) or 0, forced or 0
      local rd, td, mif = tonumber(ARGV[4]), tonumber(ARGV[7]), tonumber(ARGV[10])
      local ok, need = true, 0
      local rl, rs, tl, ts, ixNew
      if rd == 0 and td == 0 then
        -- No rates: nothing to read, unless an in-flight limit alone needs
        -- its set's TTL kept, which is the rest of the script's.
        ok = mif == 0
      else
        local raw = redis.call('HMGET', KEYS[3], 'rl', 'rs', 'ru', 'tl', 'ts', 'tu', 'qx', 'ix')
        -- Each bucket as quota_common.lua's drained and wait: brought to
        -- now, then the call's cost added; over capacity is the rest of the
        -- script's to reject.
        if rd > 0 then
          local ru = tonumber(ARGV[5])
          if tonumber(raw[3]) ~= ru then
            ok = false
          else
            rl, rs = tonumber(raw[1]) or 0, tonumber(raw[2]) or 0
            if now > rs then
              local gone = (now - rs) * rd
              rl, rs = gone >= rl and 0 or rl - gone, now
            end
            rl = rl + ru
            ok = rl <= tonumber(ARGV[6])
            need = math.ceil(rl / rd / 1000)
          end
        end
        if ok and td > 0 then
          local tu = tonumber(ARGV[8])
          if tonumber(raw[6]) ~= tu then
            ok = false
          else
            tl, ts = tonumber(raw[4]) or 0, tonumber(raw[5]) or 0
            if now > ts then
              local gone = (now - ts) * td
              tl, ts = gone >= tl and 0 or tl - gone, now
            end
            tl = tl + tonumber(ARGV[12]) * tu
            ok = tl <= tonumber(ARGV[9])
            need = math.max(need, tl > 0 and math.ceil(tl / td / 1000) or 0)
          end
        end
        -- The hash's TTL must cover the buckets' need plus a second
        -- (hash_expiry); the lease set's, the new lease plus a second.
        local qx = tonumber(raw[7])
        if ok and not (qx and qx >= now + (need + 1000) * 1000) then
          ok = false
        end
        if ok and mif > 0 then
          -- Below the limit the count decides (at it, expired leases must be
          -- counted: the rest of the script's). A set that was empty may be
          -- new, and one whose expiry (ix) falls short of the new lease plus
          -- a second is refreshed: two lease lengths and a second, stored as
          -- ix with the buckets.
          local n = redis.call('ZCARD', KEYS[4])
          ok = n < mif
          local ix, lease = tonumber(raw[8]), tonumber(ARGV[11])
          if n == 0 or not ix or ix < now + lease + 1000000 then
            ixNew = now + 2 * lease + 1000000
          end
        end
      end
      -- The advertised budget, as budget_common.lua's load, check, take
      -- and save: each window rolled once its reset has passed; a take
      -- that does not fit is the rest of the script's to reject.
      local B
      if ok and KEYS[5] then
        local est = tonumber(ARGV[12])
        local b = redis.call('HMGET', KEYS[5], 'rl', 'rr', 're', 'rp', 'rs', 'tl', 'tr', 'te', 'tp', 'ts', 'n')
        local Rl, Rr, Re, Rp, Rs = tonumber(b[1]) or -1, tonumber(b[2]) or -1, tonumber(b[3]) or 0, tonumber(b[4]) or 0, tonumber(b[5]) or 0
        local Tl, Tr, Te, Tp, Ts = tonumber(b[6]) or -1, tonumber(b[7]) or -1, tonumber(b[8]) or 0, tonumber(b[9]) or 0, tonumber(b[10]) or 0
        local blind = tonumber(b[11]) or 0
        if Re > 0 and now >= Re then
          Rr, Rp, Re = Rl, Re, 0
        end
        if Te > 0 and now >= Te then
          Tr, Tp, Te = Tl, Te, 0
        end
        if Rr >= 0 or Tr >= 0 then
          if (Rr >= 0 and Rr < (Rl >= 0 and math.min(1, Rl) or 1)) or (Tr >= 0 and Tr < (Tl >= 0 and math.min(est, Tl) or est)) then
            ok = false
          end
          if Rr >= 0 then
            Rr = Rr - 1
          end
          if Tr >= 0 then
            Tr = math.max(Tr - est, 0)
          end
        else
          blind = blind + 1
        end
        local ttl = math.max(1000000, math.max(Re - now, 0) + math.max(Rs, 1000000) + 1000000,
          math.max(Te - now, 0) + math.max(Ts, 1000000) + 1000000)
        if blind > 0 then
          ttl = math.max(ttl, 60000000)
        end
        B = { Rl, Rr, Re, Rp, Rs, Tl, Tr, Te, Tp, Ts, blind, ttl }
      end
      if ok then
        local fmt = string.format
        if ixNew then
          if rd > 0 and td > 0 then
            redis.call('HSET', KEYS[3], 'rl', fmt('%d', rl), 'rs', fmt('%d', rs), 'tl', fmt('%d', tl), 'ts', fmt('%d', ts), 'ix', fmt('%d', ixNew))
          elseif rd > 0 then
            redis.call('HSET', KEYS[3], 'rl', fmt('%d', rl), 'rs', fmt('%d', rs), 'ix', fmt('%d', ixNew))
          else
            redis.call('HSET', KEYS[3], 'tl', fmt('%d', tl), 'ts', fmt('%d', ts), 'ix', fmt('%d', ixNew))
          end
        elseif rd > 0 and td > 0 then
          redis.call('HSET', KEYS[3], 'rl', fmt('%d', rl), 'rs', fmt('%d', rs), 'tl', fmt('%d', tl), 'ts', fmt('%d', ts))
        elseif rd > 0 then
          redis.call('HSET', KEYS[3], 'rl', fmt('%d', rl), 'rs', fmt('%d', rs))
        elseif td > 0 then
          redis.call('HSET', KEYS[3], 'tl', fmt('%d', tl), 'ts', fmt('%d', ts))
        end
        if mif > 0 then
          redis.call('ZADD', KEYS[4], fmt('%d', now + tonumber(ARGV[11])), ARGV[13])
          if ixNew then
            redis.call('PEXPIRE', KEYS[4], fmt('%d', math.ceil((ixNew - now) / 1000)))
          end
        end
        if B then
          redis.call('HSET', KEYS[5],
            'rl', fmt('%d', B[1]), 'rr', fmt('%d', B[2]), 're', fmt('%d', B[3]), 'rp', fmt('%d', B[4]), 'rs', fmt('%d', B[5]),
            'tl', fmt('%d', B[6]), 'tr', fmt('%d', B[7]), 'te', fmt('%d', B[8]), 'tp', fmt('%d', B[9]), 'ts', fmt('%d', B[10]),
            'n', fmt('%d', B[11]))
          redis.call('PEXPIRE', KEYS[5], fmt('%d', math.ceil(B[12] / 1000)))
        end
        return { 1, 0, 0, 0, g, g, f, 1, 0, 0 }
      end
    end
  end
end
