-- wrk script for scripts/bench: POST /api/v1/coes/{id}/actions, a new action each
-- time. Arguments: the COE id. Prints one JSON line at the end.
dofile(debug.getinfo(1, "S").source:match("@(.*/)") .. "shared.lua")

function init(args)
  coe = args[1]
  token = os.getenv("BENCH_TOKEN")
  counter = 0
  due = os.date("!%Y-%m-%d", os.time() + 30 * 86400)
end

function request()
  counter = counter + 1
  local body = string.format(
    '{"title":"Bench action %d-%d: alarm on pool saturation","owner":"owner%d@example.com","due_date":"%s","priority":"high","kind":"detect","success_criteria":"A page within 5 minutes"}',
    id, counter, counter % 100, due)
  return wrk.format("POST", "/api/v1/coes/" .. coe .. "/actions",
    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token}, body)
end
