-- Turns waiting batch items into one batch job, if they still wait (another process may have taken them): removes
-- them, pushes the batch job to its queue and sends unreadable items to the dead set, in one step.
-- KEYS[1] the batch's sorted set, KEYS[2] set of batch names, KEYS[3] set of queue names, KEYS[4] queue list,
-- KEYS[5] dead set
-- ARGV[1] batch name ("queue|class"), ARGV[2] queue name, ARGV[3] wake channel, ARGV[4] batch job payload ("" when
-- none), ARGV[5] now, ARGV[6] item count n, ARGV[7 .. 6+n] item payloads, ARGV[7+n ..] dead payloads
local count = tonumber(ARGV[6])
for i = 7, 6 + count do
  if not redis.call("ZSCORE", KEYS[1], ARGV[i]) then
    return 0
  end
end
-- In slices: Lua's unpack takes a few thousand values at most.
for first = 7, 6 + count, 1000 do
  redis.call("ZREM", KEYS[1], unpack(ARGV, first, math.min(first + 999, 6 + count)))
end
if ARGV[4] ~= "" then
  redis.call("SADD", KEYS[3], ARGV[2])
  if redis.call("LPUSH", KEYS[4], ARGV[4]) == 1 then
    redis.call("PUBLISH", ARGV[3], ARGV[2])
  end
end
for i = 7 + count, #ARGV do
  redis.call("ZADD", KEYS[5], ARGV[5], ARGV[i])
end
if redis.call("ZCARD", KEYS[1]) == 0 then
  redis.call("SREM", KEYS[2], ARGV[1])
end
return count
