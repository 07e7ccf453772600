-- Deletes a queue's list or a sorted set, and returns how many jobs it held and the lock and jid of each unique job
-- among them, so that their locks can be released (the same jobs would be refused until the locks' ttl).
-- KEYS[1] the list or sorted set, KEYS[2] set of queue names
-- ARGV[1] "list" or "set", ARGV[2] the queue's name (for a list)
local members
if ARGV[1] == "list" then
  members = redis.call("LRANGE", KEYS[1], 0, -1)
  redis.call("SREM", KEYS[2], ARGV[2])
else
  members = redis.call("ZRANGE", KEYS[1], 0, -1)
end
redis.call("DEL", KEYS[1])
local held = {}
for _, payload in ipairs(members) do
  -- Only a unique job's payload holds the word: the others are not decoded.
  if string.find(payload, '"unique"', 1, true) then
    local ok, job = pcall(cjson.decode, payload)
    if ok and type(job) == "table" and type(job.unique) == "table" and type(job.unique.lock) == "string"
      and type(job.jid) == "string" then
      held[#held + 1] = job.unique.lock
      held[#held + 1] = job.jid
    end
  end
end
return {#members, held}
