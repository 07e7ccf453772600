-- Records that a step of a workflow died (went to the dead set). In this one step, it ends, and so does each step
-- that waits for it, directly or not (blocked: it cannot run unless the dead step is retried and succeeds); each
-- on_complete callback whose last member this ended goes to its queue's tail. Only the workflow's first death
-- pushes its on_death callback, if it has one. A step the workflow does not hold, or a step already done, changes
-- nothing.
-- KEYS[1] the workflow's hash, KEYS[2] set of queue names
-- ARGV[1] jid, ARGV[2] wake channel, ARGV[3] queue key prefix
-- Returns 1 for the workflow's first death, else 0.
if redis.call("HEXISTS", KEYS[1], "q:" .. ARGV[1]) == 0 or redis.call("HEXISTS", KEYS[1], "done:" .. ARGV[1]) == 1 then
  return 0
end
redis.call("HSET", KEYS[1], "dead:" .. ARGV[1], "1")
end_step(KEYS[1], ARGV[1], KEYS[2], ARGV[3], ARGV[2])
-- A step ended before had its dependants ended with it: the walk stops there.
local front = {ARGV[1]}
while #front > 0 do
  local reached = {}
  for _, jid in ipairs(front) do
    local dependants = redis.call("HGET", KEYS[1], "d:" .. jid)
    if dependants then
      for dependant in string.gmatch(dependants, "[^,]+") do
        if end_step(KEYS[1], dependant, KEYS[2], ARGV[3], ARGV[2]) == 1 then
          reached[#reached + 1] = dependant
        end
      end
    end
  end
  front = reached
end
if redis.call("HSETNX", KEYS[1], "died", ARGV[1]) == 0 then
  return 0
end
local payload = redis.call("HGET", KEYS[1], "death:p")
if payload then
  local queue = redis.call("HGET", KEYS[1], "death:q")
  redis.call("SADD", KEYS[2], queue)
  if redis.call("LPUSH", ARGV[3] .. queue, payload) == 1 then
    redis.call("PUBLISH", ARGV[2], queue)
  end
end
return 1
