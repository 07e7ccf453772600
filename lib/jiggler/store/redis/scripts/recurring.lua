-- Enqueues a recurring task's job: for a tick, only when the task is enabled and the tick is later than the last one
-- claimed (so each tick is enqueued once, whichever server asks first); by hand (tick ""), always. A job of a unique
-- class also takes its lock: when another job holds it, the tick stays claimed and nothing is pushed (returns 2).
-- KEYS[1] hash task => last tick, KEYS[2] hash task => last run time, KEYS[3] set of disabled tasks,
-- KEYS[4] queue list, KEYS[5] set of queue names, KEYS[6] the unique lock and KEYS[7] the index of locks (only for a
-- unique job)
-- ARGV[1] task, ARGV[2] tick or "", ARGV[3] now, ARGV[4] queue name, ARGV[5] wake channel, ARGV[6] payload,
-- ARGV[7] the job's jid and ARGV[8] the lock's ttl (ms), for a unique job
-- Uses parts/lock.lua.
if ARGV[2] ~= "" then
  if redis.call("SISMEMBER", KEYS[3], ARGV[1]) == 1 then
    return 0
  end
  local last = redis.call("HGET", KEYS[1], ARGV[1])
  if last and tonumber(last) >= tonumber(ARGV[2]) then
    return 0
  end
  redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
end
if KEYS[6] and not take_lock(KEYS[6], KEYS[7], ARGV[7], ARGV[8], math.floor(tonumber(ARGV[3]) * 1000)) then
  return 2
end
redis.call("HSET", KEYS[2], ARGV[1], ARGV[3])
redis.call("SADD", KEYS[5], ARGV[4])
if redis.call("LPUSH", KEYS[4], ARGV[6]) == 1 then
  redis.call("PUBLISH", ARGV[5], ARGV[4])
end
return 1
