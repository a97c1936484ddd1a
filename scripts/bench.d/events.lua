-- wrk script for scripts/bench: POST /api/v1/events, every alert new.
-- Arguments (after --): events per request, groups (0: every alert its own group),
-- severity, the scenario's name (in every key: one scenario never repeats another's
-- alerts). The token comes from BENCH_TOKEN. Prints one JSON line at the end, with
-- `not_new`: answers other than 202 (a delivery that stored nothing new).
dofile(debug.getinfo(1, "S").source:match("@(.*/)") .. "shared.lua")

function init(args)
  batch = tonumber(args[1] or "1")
  groups = tonumber(args[2] or "0")
  severity = args[3] or "sev3"
  token = os.getenv("BENCH_TOKEN")
  prefix = (args[4] or "events") .. "-" .. os.time() .. "-t" .. id
  counter = 0
  not_new = 0
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

function response(status, headers, body)
  if status ~= 202 then not_new = not_new + 1 end
end

function done(summary, latency, requests)
  local n = 0
  for _, t in ipairs(threads) do n = n + (t:get("not_new") or 0) end
  report(summary, latency, {not_new = n})
end
