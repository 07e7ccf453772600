-- Completes a workflow step, with its acknowledgement, once per jid: the step leaves flight (counted as processed,
-- as fetch's acknowledgement counts it), is marked done with its result, and each dependant whose last dependency
-- this was goes to its queue's tail; unless it ended before (died, or blocked by a dead dependency), its end counts
-- for its on_complete callbacks, each going to its queue's tail once its last member ended. A step completed before
-- (a second delivery) changes nothing but its flight.
-- KEYS[1] the workflow's hash, KEYS[2] in-flight hash, KEYS[3] processed counter, KEYS[4] set of queue names,
-- KEYS[5] index of workflows
-- ARGV[1] in-flight field ("" when not held in flight), ARGV[2] jid, ARGV[3] result JSON or "", ARGV[4] wake
-- channel, ARGV[5] queue key prefix, ARGV[6] seconds to keep a finished workflow, ARGV[7] workflow id, ARGV[8] when
-- a finished workflow's state expires (epoch seconds, written by the caller)
-- Returns 1 when this call completed the step, 0 when it was done already (or the workflow does not hold it).
local acked = 0
if ARGV[1] ~= "" then
  acked = redis.call("HDEL", KEYS[2], ARGV[1])
end
local counted = acked
local done = 0
-- Only a step the workflow holds (an expired workflow, or a jid it never had, changes nothing).
if redis.call("HEXISTS", KEYS[1], "q:" .. ARGV[2]) == 1 and redis.call("HSETNX", KEYS[1], "done:" .. ARGV[2], "1") == 1 then
  done = 1
  if ARGV[1] == "" then counted = 1 end
  if ARGV[3] ~= "" then
    redis.call("HSET", KEYS[1], "r:" .. ARGV[2], ARGV[3])
  end
  end_step(KEYS[1], ARGV[2], KEYS[4], ARGV[5], ARGV[4])
  local dependants = redis.call("HGET", KEYS[1], "d:" .. ARGV[2])
  if dependants then
    for jid in string.gmatch(dependants, "[^,]+") do
      release_step(KEYS[1], jid, KEYS[4], ARGV[5], ARGV[4])
    end
  end
  if redis.call("HINCRBY", KEYS[1], "left", -1) == 0 then
    redis.call("EXPIRE", KEYS[1], ARGV[6])
    redis.call("ZADD", KEYS[5], ARGV[8], ARGV[7])
  end
end
if counted > 0 then
  redis.call("INCRBY", KEYS[3], counted)
end
return done
