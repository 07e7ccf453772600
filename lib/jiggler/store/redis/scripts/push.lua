-- Appends jobs to a queue and registers the queue's name.
-- KEYS[1] queue list, KEYS[2] set of queue names
-- ARGV[1] queue name, ARGV[2] wake channel, ARGV[3..] payloads
redis.call("SADD", KEYS[2], ARGV[1])
local length = redis.call("LPUSH", KEYS[1], unpack(ARGV, 3))
-- Idle servers wait on the wake channel; they need telling only when the queue was empty.
if length == #ARGV - 2 then
  redis.call("PUBLISH", ARGV[2], ARGV[1])
end
return length
