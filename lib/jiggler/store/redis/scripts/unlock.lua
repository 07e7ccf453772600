-- Releases a lock, only if the job named holds it (an expired lock may have been taken by another job since).
-- KEYS[1] lock, KEYS[2] index of locks; ARGV[1] jid
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("ZREM", KEYS[2], KEYS[1])
  return redis.call("DEL", KEYS[1])
end
return 0
