-- Workflow steps (one hash per workflow): releases and ends, shared by step.lua and died.lua.

-- Counts one thing a held step waited for as met; the last pushes the step to its queue's tail.
-- wf: the workflow's hash, queues: set of queue names, prefix: queue key prefix, wake: wake channel
local function release_step(wf, jid, queues, prefix, wake)
  if redis.call("HINCRBY", wf, "n:" .. jid, -1) == 0 then
    local queue = redis.call("HGET", wf, "q:" .. jid)
    local payload = redis.call("HGET", wf, "p:" .. jid)
    redis.call("HDEL", wf, "n:" .. jid, "p:" .. jid)
    redis.call("SADD", queues, queue)
    if redis.call("LPUSH", prefix .. queue, payload) == 1 then
      redis.call("PUBLISH", wake, queue)
    end
  end
end

-- Ends a step (done, dead or blocked), once: each on_complete callback counting it has one member less to wait
-- for. Returns 1 when this call ended it, 0 when it had ended before.
local function end_step(wf, jid, queues, prefix, wake)
  if redis.call("HSETNX", wf, "end:" .. jid, "1") == 0 then
    return 0
  end
  local callbacks = redis.call("HGET", wf, "c:" .. jid)
  if callbacks then
    for callback in string.gmatch(callbacks, "[^,]+") do
      release_step(wf, callback, queues, prefix, wake)
    end
  end
  return 1
end
