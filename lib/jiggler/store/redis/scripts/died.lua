-- Records that a step of a workflow died (went to the dead set), once per workflow: the first death pushes the
-- workflow's on_death callback, if it has one, to its queue's tail. A step the workflow does not hold, or a step
-- already done, changes nothing.
-- KEYS[1] the workflow's hash, KEYS[2] set of queue names
-- ARGV[1] jid, ARGV[2] wake channel, ARGV[3] queue key prefix
-- Returns 1 for the workflow's first death, else 0.
if redis.call("HEXISTS", KEYS[1], "q:" .. ARGV[1]) == 0 or redis.call("HEXISTS", KEYS[1], "done:" .. ARGV[1]) == 1 then
  return 0
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
