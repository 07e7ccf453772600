-- Acknowledges finished jobs, then takes up to a limit of jobs from the queues in order (strict priority), skipping
-- paused queues, and, in at-least-once mode, records each in the process's in-flight hash in the same step.
-- KEYS[1] in-flight hash, KEYS[2] processed counter, KEYS[3] set of paused queue names, KEYS[4..] queue lists
-- ARGV[1] limit, ARGV[2] first token, ARGV[3] "1" to record in flight, ARGV[4] ack count n,
-- ARGV[5 .. 4+n] in-flight fields to acknowledge, ARGV[5+n ..] queue names (one per queue list)
-- Returns, per queue that gave jobs: its name, then a list of in-flight field ("token|queue") and payload, alternating.
local acks = tonumber(ARGV[4])
if acks > 0 then
  local finished = acks
  if ARGV[3] == "1" then
    -- An acknowledgement sent again after a lost reply counts once.
    finished = redis.call("HDEL", KEYS[1], unpack(ARGV, 5, 4 + acks))
  end
  redis.call("INCRBY", KEYS[2], finished)
end

local limit = tonumber(ARGV[1])
local token = tonumber(ARGV[2])
local names = 4 + acks
local fetched = {}
local records = {}
for i = 4, #KEYS do
  if limit <= 0 then break end
  local name = ARGV[names + i - 3]
  local jobs = false
  if redis.call("SISMEMBER", KEYS[3], name) == 0 then
    jobs = redis.call("RPOP", KEYS[i], limit)
  end
  if jobs then
    local taken = {}
    for _, payload in ipairs(jobs) do
      local field = string.format("%d|%s", token, name)
      token = token + 1
      taken[#taken + 1] = field
      taken[#taken + 1] = payload
      records[#records + 1] = field
      records[#records + 1] = payload
    end
    fetched[#fetched + 1] = name
    fetched[#fetched + 1] = taken
    limit = limit - #jobs
  end
end
-- In slices: Lua's unpack takes a few thousand values at most.
if ARGV[3] == "1" then
  for first = 1, #records, 1000 do
    redis.call("HSET", KEYS[1], unpack(records, first, math.min(first + 999, #records)))
  end
end
return fetched
