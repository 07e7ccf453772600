-- Takes a unique job's lock and writes the job, or does nothing when the lock is held.
-- KEYS[1] lock, KEYS[2] queue list, KEYS[3] set of queue names, KEYS[4] scheduled set, KEYS[5] index of locks
-- ARGV[1] jid, ARGV[2] ttl (ms), ARGV[3] queue name, ARGV[4] wake channel, ARGV[5] schedule announcement channel,
-- ARGV[6] payload, ARGV[7] run-at time, or "" for now, ARGV[8] now (ms)
-- Uses parts/lock.lua.
if not take_lock(KEYS[1], KEYS[5], ARGV[1], ARGV[2], tonumber(ARGV[8])) then
  return 0
end
if ARGV[7] == "" then
  redis.call("SADD", KEYS[3], ARGV[3])
  if redis.call("LPUSH", KEYS[2], ARGV[6]) == 1 then
    redis.call("PUBLISH", ARGV[4], ARGV[3])
  end
else
  local first = redis.call("ZRANGE", KEYS[4], 0, 0, "WITHSCORES")
  redis.call("ZADD", KEYS[4], ARGV[7], ARGV[6])
  if first[2] == nil or tonumber(ARGV[7]) < tonumber(first[2]) then
    redis.call("PUBLISH", ARGV[5], ARGV[7])
  end
end
return 1
