-- Moves jobs to their queues, each exactly once (a job another process moved first is skipped): due jobs from the
-- scheduled or retry set to the tail of their queue, or in-flight jobs back to the head of theirs.
-- KEYS[1] the sorted set or in-flight hash, KEYS[2] set of queue names, KEYS[3..] queue lists, one per job
-- ARGV[1] wake channel, ARGV[2] "set" or "in_flight", then triples per job: member or field, queue name, payload to
-- push (for an in-flight job, "" pushes it as it was recorded)
local from_set = ARGV[2] == "set"
local moved = 0
for i = 3, #KEYS do
  local at = (i - 3) * 3 + 3
  local item, queue, payload = ARGV[at], ARGV[at + 1], ARGV[at + 2]
  local length = 0
  if from_set then
    if redis.call("ZREM", KEYS[1], item) == 1 then
      length = redis.call("LPUSH", KEYS[i], payload)
    end
  else
    local recorded = redis.call("HGET", KEYS[1], item)
    if recorded then
      redis.call("HDEL", KEYS[1], item)
      length = redis.call("RPUSH", KEYS[i], payload ~= "" and payload or recorded)
    end
  end
  if length > 0 then
    redis.call("SADD", KEYS[2], queue)
    moved = moved + 1
  end
  -- Idle servers wait on the wake channel; they need telling only when the queue was empty.
  if length == 1 then
    redis.call("PUBLISH", ARGV[1], queue)
  end
end
return moved
