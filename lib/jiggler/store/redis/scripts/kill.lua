-- Moves entries of the scheduled or retry set to the dead set, each exactly once (an entry another process moved
-- first is skipped).
-- KEYS[1] the scheduled or retry set, KEYS[2] the dead set
-- ARGV[1] the dead set's score (the time of death), then pairs per job: member, payload to store in the dead set
local moved = 0
for at = 2, #ARGV, 2 do
  if redis.call("ZREM", KEYS[1], ARGV[at]) == 1 then
    redis.call("ZADD", KEYS[2], ARGV[1], ARGV[at + 1])
    moved = moved + 1
  end
end
return moved
