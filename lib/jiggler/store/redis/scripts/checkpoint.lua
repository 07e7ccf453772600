-- Rewrites the payload of a job a process holds in flight (an iterable job's checkpoint), only while it still holds
-- it: a job a reaper moved back to its queue, or that another process runs now, is left as it is.
-- KEYS[1] the process's in-flight hash
-- ARGV[1] the job's in-flight field (its handle), ARGV[2] the payload to record
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
return 1
