-- Moves due jobs from a sorted set (scheduled or retry) to their queues; a job another process moved first is skipped.
-- KEYS[1] sorted set, KEYS[2] set of queue names, KEYS[3..] queue lists
-- ARGV[1] wake channel, then triples per queue list: member, queue name, payload to push
local moved = 0
for i = 3, #KEYS do
  local at = (i - 3) * 3 + 2
  if redis.call("ZREM", KEYS[1], ARGV[at]) == 1 then
    redis.call("SADD", KEYS[2], ARGV[at + 1])
    if redis.call("LPUSH", KEYS[i], ARGV[at + 2]) == 1 then
      redis.call("PUBLISH", ARGV[1], ARGV[at + 1])
    end
    moved = moved + 1
  end
end
return moved
