-- Adds jobs to the scheduled set, and announces them when one is due sooner than every job already there: idle
-- schedulers sleep until the earliest job is due.
-- KEYS[1] scheduled set
-- ARGV[1] announcement channel, ARGV[2] the earliest new score, ARGV[3..] score and payload pairs
local first = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
local added = redis.call("ZADD", KEYS[1], unpack(ARGV, 3))
if first[2] == nil or tonumber(ARGV[2]) < tonumber(first[2]) then
  redis.call("PUBLISH", ARGV[1], ARGV[2])
end
return added
