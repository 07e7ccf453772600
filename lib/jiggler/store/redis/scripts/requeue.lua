-- Puts jobs that were in flight back at the head of their queues, each exactly once.
-- KEYS[1] in-flight hash, KEYS[2] set of queue names, KEYS[3..] queue lists
-- ARGV[1] wake channel, then pairs per queue list: in-flight field, queue name
local moved = 0
for i = 3, #KEYS do
  local at = (i - 3) * 2 + 2
  local payload = redis.call("HGET", KEYS[1], ARGV[at])
  if payload then
    redis.call("HDEL", KEYS[1], ARGV[at])
    redis.call("SADD", KEYS[2], ARGV[at + 1])
    if redis.call("RPUSH", KEYS[i], payload) == 1 then
      redis.call("PUBLISH", ARGV[1], ARGV[at + 1])
    end
    moved = moved + 1
  end
end
return moved
