-- Moves failed jobs out of flight into the retry or the dead set, in one step, and counts the failures.
-- KEYS[1] in-flight hash, KEYS[2] retry set, KEYS[3] dead set, KEYS[4] failures counter
-- ARGV[1] "1" when jobs are recorded in flight, ARGV[2] dead cutoff time, ARGV[3] dead set size limit,
-- then groups of four: in-flight field, "retry" or "dead", score, payload
local reliable = ARGV[1] == "1"
local died = false
local moved = 0
for i = 4, #ARGV, 4 do
  -- A job no longer in flight was requeued elsewhere; writing it again would put it in two places.
  if not reliable or redis.call("HDEL", KEYS[1], ARGV[i]) == 1 then
    moved = moved + 1
    if ARGV[i + 1] == "dead" then
      redis.call("ZADD", KEYS[3], ARGV[i + 2], ARGV[i + 3])
      died = true
    else
      redis.call("ZADD", KEYS[2], ARGV[i + 2], ARGV[i + 3])
    end
  end
end
redis.call("INCRBY", KEYS[4], moved)
if died then
  redis.call("ZREMRANGEBYSCORE", KEYS[3], "-inf", ARGV[2])
  redis.call("ZREMRANGEBYRANK", KEYS[3], 0, -1 - tonumber(ARGV[3]))
end
return moved
