-- wrk script for scripts/bench: POST /api/v1/events, every alert new.
-- Arguments (after --): events per request, groups (0: every alert its own group),
-- severity. The token comes from BENCH_TOKEN. Prints one JSON line at the end.
dofile(debug.getinfo(1, "S").source:match("@(.*/)") .. "shared.lua")

function init(args)
  batch = tonumber(args[1] or "1")
  groups = tonumber(args[2] or "0")
  severity = args[3] or "sev3"
  token = os.getenv("BENCH_TOKEN")
  prefix = "t" .. id .. "-" .. tostring(math.random(1, 1000000000))
  counter = 0
end

function request()
  counter = counter + 1
  local items = {}
  for i = 1, batch do
    local n = counter * batch + i
    local group
    if groups > 0 then group = "g-" .. (n % groups) else group = prefix .. "-" .. n end
    items[i] = string.format(
      '{"dedup_key":"%s-%d","group_key":"%s","title":"Bench alert %s","severity":"%s","started_at":"2026-11-30T10:00:00Z"}',
      prefix, n, group, group, severity)
  end
  return wrk.format("POST", "/api/v1/events",
    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token},
    "[" .. table.concat(items, ",") .. "]")
end
