-- Cancels a job where it waits, in one step: takes it out of its queue, scheduled or retry set, batch or its limit
-- key's waiting list, stores it in the dead set as cancelled (the payload the caller marked), trims the dead set and
-- releases its unique lock if it still holds it. Returns 0 when it is no longer there (fetched, moved or cancelled
-- meanwhile): then it is not waiting, and the cancel request stops it if it runs.
-- KEYS[1] the place (queue list, sorted set or waiting list), KEYS[2] dead set, KEYS[3] the job's lock,
-- KEYS[4] index of locks, KEYS[5] hash of waiting limit keys, KEYS[6] hash of queue => jobs waiting for a slot,
-- KEYS[7] set of batch names
-- ARGV[1] "list", "set", "batch" or "waiting", ARGV[2] the member as found, ARGV[3] now (the dead set's score),
-- ARGV[4] the cancelled payload, ARGV[5] dead cutoff time, ARGV[6] dead set size limit, ARGV[7] jid,
-- ARGV[8] "1" for a unique job, ARGV[9] the batch name or the queue the waiting job runs in, ARGV[10] its limit key
local kind = ARGV[1]
if kind == "list" or kind == "waiting" then
  if redis.call("LREM", KEYS[1], 1, ARGV[2]) == 0 then return 0 end
elseif redis.call("ZREM", KEYS[1], ARGV[2]) == 0 then
  return 0
end
if kind == "waiting" then
  redis.call("HINCRBY", KEYS[6], ARGV[9], -1)
  if redis.call("LLEN", KEYS[1]) == 0 then redis.call("HDEL", KEYS[5], ARGV[10]) end
elseif kind == "batch" and redis.call("ZCARD", KEYS[1]) == 0 then
  redis.call("SREM", KEYS[7], ARGV[9])
end
redis.call("ZADD", KEYS[2], ARGV[3], ARGV[4])
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", ARGV[5])
redis.call("ZREMRANGEBYRANK", KEYS[2], 0, -1 - tonumber(ARGV[6]))
if ARGV[8] == "1" and redis.call("GET", KEYS[3]) == ARGV[7] then
  redis.call("ZREM", KEYS[4], KEYS[3])
  redis.call("DEL", KEYS[3])
end
return 1
