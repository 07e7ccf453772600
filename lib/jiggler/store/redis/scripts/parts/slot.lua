-- Gives `jid` a slot of the limit `key` for `ttl` seconds from `now`. The slots' key lives as long as its last slot,
-- and the index (limit key => expiry) lets clear_all find it without walking the keyspace.
local function hold_slot(slots, index, key, jid, now, ttl)
  local expiry = now + ttl
  redis.call("ZADD", slots, expiry, jid)
  local ms = math.ceil(ttl * 1000)
  if redis.call("PTTL", slots) < ms then
    redis.call("PEXPIRE", slots, ms)
  end
  redis.call("ZADD", index, "GT", expiry, key)
end
