-- clock.lua: the first prelude of every script: whole numbers as Redis
-- stores them, and the server's clock read at most once per script run, so
-- the parts of a combined script (admit.lua, conclude.lua) decide at one
-- instant and pay for one TIME.

-- int renders a whole number without exponent: tostring(1.7e15) in Lua 5.1
-- gives "1.7e+15", which Redis would store as-is.
local function int(n)
  return string.format('%d', n)
end

-- now_us is the server's time in µs.
local now_cached
local function now_us()
  if not now_cached then
    local t = redis.call('TIME')
    now_cached = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return now_cached
end
