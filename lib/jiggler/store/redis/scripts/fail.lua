-- Moves failed jobs out of flight into the retry or the dead set, in one step, and counts the failures. A snoozed
-- job goes to the scheduled set and a cancelled one to the dead set; neither counts as a failure.
-- KEYS[1] in-flight hash, KEYS[2] retry set, KEYS[3] dead set, KEYS[4] failures counter, KEYS[5] scheduled set
-- ARGV[1] "1" when jobs are recorded in flight, ARGV[2] dead cutoff time, ARGV[3] dead set size limit,
-- ARGV[4] the channel announcing scheduled jobs,
-- then groups of four: in-flight field, "retry", "dead", "scheduled" or "cancelled", score, payload
local reliable = ARGV[1] == "1"
local died = false
local snoozed = false
local failed = 0
local moved = 0
for i = 5, #ARGV, 4 do
  -- A job no longer in flight was requeued elsewhere; writing it again would put it in two places.
  if not reliable or redis.call("HDEL", KEYS[1], ARGV[i]) == 1 then
    moved = moved + 1
    local set = ARGV[i + 1]
    if set == "dead" or set == "cancelled" then
      redis.call("ZADD", KEYS[3], ARGV[i + 2], ARGV[i + 3])
      died = true
    elseif set == "scheduled" then
      redis.call("ZADD", KEYS[5], ARGV[i + 2], ARGV[i + 3])
      snoozed = true
    else
      redis.call("ZADD", KEYS[2], ARGV[i + 2], ARGV[i + 3])
    end
    if set == "retry" or set == "dead" then failed = failed + 1 end
  end
end
redis.call("INCRBY", KEYS[4], failed)
if died then
  redis.call("ZREMRANGEBYSCORE", KEYS[3], "-inf", ARGV[2])
  redis.call("ZREMRANGEBYRANK", KEYS[3], 0, -1 - tonumber(ARGV[3]))
end
if snoozed then redis.call("PUBLISH", ARGV[4], "snoozed") end
return moved
