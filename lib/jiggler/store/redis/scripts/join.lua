-- Moves due batch items from the scheduled set into their batches, each exactly once (an item another process moved
-- first is skipped); the Batcher forms the batches.
-- KEYS[1] the scheduled set, KEYS[2] set of batch names, KEYS[3..] the batches' sorted sets, one per item
-- ARGV[1] now (the items' score in their batch), then triples per item: member, batch name ("queue|class"), payload
local moved = 0
for i = 3, #KEYS do
  local at = (i - 3) * 3 + 2
  if redis.call("ZREM", KEYS[1], ARGV[at]) == 1 then
    redis.call("ZADD", KEYS[i], ARGV[1], ARGV[at + 2])
    redis.call("SADD", KEYS[2], ARGV[at + 1])
    moved = moved + 1
  end
end
return moved
