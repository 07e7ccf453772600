-- Frees a job's slot, then gives free slots to the oldest waiting jobs of the key: each gets a slot reserved and goes
-- to the head of its queue, to run next.
-- KEYS[1] slots, KEYS[2] waiting list, KEYS[3] hash of waiting keys, KEYS[4] hash of queue => jobs waiting,
-- KEYS[5] set of queue names, KEYS[6] index of keys with slots
-- ARGV[1] jid or "", ARGV[2] limit, ARGV[3] now, ARGV[4] ttl, ARGV[5] key, ARGV[6] wake channel, ARGV[7] queue key prefix
-- Uses parts/slot.lua.
if ARGV[1] ~= "" then
  redis.call("ZREM", KEYS[1], ARGV[1])
end
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[3])
local moved = 0
while redis.call("ZCARD", KEYS[1]) < tonumber(ARGV[2]) do
  local entry = redis.call("LPOP", KEYS[2])
  if not entry then break end
  local bar = string.find(entry, "|", 1, true)
  local queue = string.sub(entry, 1, bar - 1)
  local second = string.find(entry, "|", bar + 1, true)
  hold_slot(KEYS[1], KEYS[6], ARGV[5], string.sub(entry, bar + 1, second - 1), tonumber(ARGV[3]), tonumber(ARGV[4]))
  redis.call("HINCRBY", KEYS[4], queue, -1)
  redis.call("SADD", KEYS[5], queue)
  if redis.call("RPUSH", ARGV[7] .. queue, string.sub(entry, second + 1)) == 1 then
    redis.call("PUBLISH", ARGV[6], queue)
  end
  moved = moved + 1
end
if redis.call("LLEN", KEYS[2]) == 0 then
  redis.call("HDEL", KEYS[3], ARGV[5])
end
return moved
