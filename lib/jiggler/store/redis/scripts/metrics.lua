-- Adds per-class counts to a minute's hash and to the totals, tracking at most `limit` classes (Metrics::ClassCap):
-- a class already tracked, or one that fits, is counted under its name and marked seen now; any other under `other`.
-- Classes not seen since `idle_before` leave the totals first, giving their places to others.
-- KEYS[1] the minute's hash, KEYS[2] totals, KEYS[3] tracked classes (sorted set name => last seen),
-- KEYS[4] the minutes kept (sorted set key => expiry)
-- ARGV[1] now, ARGV[2] idle_before, ARGV[3] limit, ARGV[4] other, ARGV[5] the last histogram bucket,
-- ARGV[6] the minute's expiry; then per class: name, count of fields, then field and value pairs.
local now, limit, other = tonumber(ARGV[1]), tonumber(ARGV[3]), ARGV[4]
for _, name in ipairs(redis.call("ZRANGEBYSCORE", KEYS[3], "-inf", "(" .. ARGV[2])) do
  local fields = {name .. "|p", name .. "|f", name .. "|us"}
  for bucket = 0, tonumber(ARGV[5]) do table.insert(fields, name .. "|h" .. bucket) end
  redis.call("HDEL", KEYS[2], unpack(fields))
  redis.call("ZREM", KEYS[3], name)
end
local index = 7
while index <= #ARGV do
  local name, count = ARGV[index], tonumber(ARGV[index + 1])
  if name ~= other and (redis.call("ZSCORE", KEYS[3], name) or redis.call("ZCARD", KEYS[3]) < limit) then
    redis.call("ZADD", KEYS[3], now, name)
  else
    name = other
  end
  for pair = 0, count - 1 do
    local field, value = ARGV[index + 2 + pair * 2], ARGV[index + 3 + pair * 2]
    redis.call("HINCRBY", KEYS[1], name .. "|" .. field, value)
    redis.call("HINCRBY", KEYS[2], name .. "|" .. field, value)
  end
  index = index + 2 + count * 2
end
redis.call("EXPIREAT", KEYS[1], ARGV[6])
redis.call("ZADD", KEYS[4], ARGV[6], KEYS[1])
redis.call("ZREMRANGEBYSCORE", KEYS[4], "-inf", now)
return 0
