-- A job about to run takes a start of its key's budget (fewer than limit starts in the last period), or moves from
-- flight to the scheduled set, due when the budget allows: a job that never waited reserves the time the start
-- `limit` places before the last planned one leaves the window (so waiting jobs come back in order, spaced); a job
-- that came back and still finds no budget (it came back late), when the oldest start in the window leaves it.
-- KEYS[1] starts (sorted set, by time), KEYS[2] plan (starts and reservations, by time), KEYS[3] the process's
-- in-flight hash, KEYS[4] scheduled set, KEYS[5] index of limit keys
-- ARGV[1] jid, ARGV[2] limit, ARGV[3] period, ARGV[4] in-flight field, ARGV[5] "1" if reliable, ARGV[6] payload,
-- ARGV[7] schedule announcement channel, ARGV[8] the limit's key
-- Returns "run", the time it is due again, or "gone" (no longer in flight here).
local limit, period = tonumber(ARGV[2]), tonumber(ARGV[3])
-- The server's clock, read as the script runs: scripts run one at a time, so starts are recorded in the order they
-- were taken. A client's clock, read before its call, would let a later call forget a start less than a period old.
local time = redis.call("TIME")
local now = tonumber(time[1]) + tonumber(time[2]) / 1000000
-- A key lives as long as what it holds matters (a start for a period, a plan entry for two after its time), and the
-- index (limit key => expiry) lets clear_all find it without walking the keyspace.
local function keep(key, expiry)
  local ms = math.ceil((expiry - now) * 1000)
  if redis.call("PTTL", key) < ms then
    redis.call("PEXPIRE", key, ms)
  end
  redis.call("ZADD", KEYS[5], "GT", expiry, ARGV[8])
end
redis.call("ZREMRANGEBYSCORE", KEYS[5], "-inf", now)
local reservation = "r:" .. ARGV[1]
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now - period)
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now - 2 * period)
local returning = redis.call("ZSCORE", KEYS[2], reservation)
-- What is left are the starts of the last period. (A bound written into a string would lose precision: Lua prints
-- numbers with 14 digits, 0.1 ms here, and a start that much inside the window would go uncounted.)
if redis.call("ZCARD", KEYS[1]) < limit then
  local start = ARGV[1] .. ":" .. string.format("%.6f", now)
  redis.call("ZADD", KEYS[1], now, start)
  redis.call("ZREM", KEYS[2], reservation)
  redis.call("ZADD", KEYS[2], now, start)
  keep(KEYS[1], now + period)
  keep(KEYS[2], now + 2 * period)
  return "run"
end
local due
if returning then
  due = tonumber(redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")[2]) + period
else
  local nth = redis.call("ZREVRANGE", KEYS[2], limit - 1, limit - 1, "WITHSCORES")
  due = math.max(now, (nth[2] and tonumber(nth[2]) or now) + period)
end
if ARGV[5] == "1" and redis.call("HDEL", KEYS[3], ARGV[4]) == 0 then
  return "gone"
end
redis.call("ZADD", KEYS[2], due, reservation)
keep(KEYS[2], due + 2 * period)
local first = redis.call("ZRANGE", KEYS[4], 0, 0, "WITHSCORES")
redis.call("ZADD", KEYS[4], due, ARGV[6])
if first[2] == nil or due < tonumber(first[2]) then
  redis.call("PUBLISH", ARGV[7], tostring(due))
end
return tostring(due)
