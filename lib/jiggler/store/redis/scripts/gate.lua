-- A job about to run takes a slot of its key, or moves from flight to the key's waiting list (in one step, so a slot
-- freed meanwhile cannot be missed).
-- KEYS[1] slots (sorted set jid => expiry), KEYS[2] waiting list, KEYS[3] hash of waiting keys => "limit ttl",
-- KEYS[4] hash of queue => jobs waiting, KEYS[5] the process's in-flight hash, KEYS[6] index of keys with slots
-- ARGV[1] jid, ARGV[2] limit, ARGV[3] now, ARGV[4] ttl, ARGV[5] key, ARGV[6] in-flight field, ARGV[7] "1" if reliable,
-- ARGV[8] queue, ARGV[9] payload
-- Returns 1 (run it), 0 (it waits) or 2 (it is no longer in flight here: leave it). Uses parts/slot.lua.
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[3])
if redis.call("ZSCORE", KEYS[1], ARGV[1]) or redis.call("ZCARD", KEYS[1]) < tonumber(ARGV[2]) then
  redis.call("ZREMRANGEBYSCORE", KEYS[6], "-inf", ARGV[3])
  hold_slot(KEYS[1], KEYS[6], ARGV[5], ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[4]))
  return 1
end
if ARGV[7] == "1" and redis.call("HDEL", KEYS[5], ARGV[6]) == 0 then
  return 2
end
redis.call("RPUSH", KEYS[2], ARGV[8] .. "|" .. ARGV[1] .. "|" .. ARGV[9])
redis.call("HSET", KEYS[3], ARGV[5], ARGV[2] .. " " .. ARGV[4])
redis.call("HINCRBY", KEYS[4], ARGV[8], 1)
return 0
