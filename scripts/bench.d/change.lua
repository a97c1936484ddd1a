-- wrk script for scripts/bench: PATCH /api/v1/actions/{id}, a new description of a
-- random action each time (no version needed, so every answer is a 200: a write
-- that is kept, unlike the mixed load's edits, most of which are refused as stale).
-- Arguments: comma-separated action ids. Prints one JSON line at the end.
dofile(debug.getinfo(1, "S").source:match("@(.*/)") .. "shared.lua")

function init(args)
  actions = {}
  for part in string.gmatch(args[1] or "", "[^,]+") do table.insert(actions, part) end
  token = os.getenv("BENCH_TOKEN")
  counter = 0
  math.randomseed(id * 7919 + os.time())
end

function request()
  counter = counter + 1
  local body = string.format(
    '{"description":"Change %d-%d: alarm when the pool is 80%% used for 5 minutes"}', id, counter)
  return wrk.format("PATCH", "/api/v1/actions/" .. actions[math.random(#actions)],
    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token}, body)
end
