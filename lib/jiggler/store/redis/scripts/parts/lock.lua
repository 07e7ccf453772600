-- Takes a unique job's lock for `jid` for `ttl_ms`, unless another job holds it; the index (lock key => expiry, ms)
-- lets clear_all find the locks without walking the keyspace. Returns whether it was taken.
local function take_lock(lock, index, jid, ttl_ms, now_ms)
  if not redis.call("SET", lock, jid, "NX", "PX", ttl_ms) then
    return false
  end
  redis.call("ZREMRANGEBYSCORE", index, "-inf", now_ms)
  redis.call("ZADD", index, now_ms + tonumber(ttl_ms), lock)
  return true
end
