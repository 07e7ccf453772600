-- Writes a workflow: every step's list of dependants, each waiting step with its payload, queue and count of
-- dependencies left, and the count of steps not done; steps with no dependency go to their queues' tails.
-- The index of workflows (id => when its state expires, +inf while it runs) lets clear_all find them.
-- KEYS[1] the workflow's hash, KEYS[2] set of queue names, KEYS[3] index of workflows
-- ARGV[1] wake channel, ARGV[2] queue key prefix, ARGV[3] number of steps, ARGV[4] workflow id, ARGV[5] now,
-- ARGV[6] and ARGV[7] the on_death callback's queue and payload ("" for none), then per step: jid, queue, payload,
-- dependencies (a count, as a decimal string; for an on_complete callback, its members), dependants (jids joined
-- by ","), the on_complete callbacks that wait for it to end (jids joined by ",")
redis.call("ZREMRANGEBYSCORE", KEYS[3], "-inf", ARGV[5])
redis.call("ZADD", KEYS[3], "+inf", ARGV[4])
redis.call("HSET", KEYS[1], "left", ARGV[3])
if ARGV[7] ~= "" then
  redis.call("HSET", KEYS[1], "death:q", ARGV[6], "death:p", ARGV[7])
end
for i = 8, #ARGV, 6 do
  local jid, queue, payload, waiting, dependants = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  redis.call("HSET", KEYS[1], "q:" .. jid, queue)
  if dependants ~= "" then
    redis.call("HSET", KEYS[1], "d:" .. jid, dependants)
  end
  if ARGV[i + 5] ~= "" then
    redis.call("HSET", KEYS[1], "c:" .. jid, ARGV[i + 5])
  end
  if waiting ~= "0" then
    redis.call("HSET", KEYS[1], "n:" .. jid, waiting, "p:" .. jid, payload)
  else
    redis.call("SADD", KEYS[2], queue)
    if redis.call("LPUSH", ARGV[2] .. queue, payload) == 1 then
      redis.call("PUBLISH", ARGV[1], queue)
    end
  end
end
return 1
