-- retry_after.lua: one source's share of RetryAfter(sources). Reads only.
-- The Go side sends one of these per source in one pipeline (sources live on
-- different cluster slots) and takes the minimum.
-- KEYS[1] record hash, KEYS[2] probe lease set (see common.lua; unused here
-- but declared so every script names the same slot).
-- ARGV[1..NPOLICY] policy (see common.lua); nothing else.
-- Reply: retry_after µs (openUntil − now while Open and not due, else 0).
local now = now_us()
local st, ou = unpack(redis.call('HMGET', KEYS[1], 'st', 'ou'))
local r = { st = tonumber(st) or CLOSED, ou = tonumber(ou) or 0 }
return remaining(r, now)
