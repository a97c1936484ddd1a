-- wrk script for scripts/bench: the mixed load of people using the service. Each
-- request is one of: a COE document (40%), the COE list (20%), the stats (10%), a
-- section edit of the thread's own COE with the version last seen (15%), an action
-- transition, start or back to open (15%). Arguments: comma-separated COE ids, comma-separated action ids.
-- A 409/412 (someone else saved first) is a correct answer under concurrent edits:
-- counted apart from 5xx. Prints one JSON line at the end.
dofile(debug.getinfo(1, "S").source:match("@(.*/)") .. "shared.lua")

local function split(s)
  local out = {}
  for part in string.gmatch(s or "", "[^,]+") do table.insert(out, part) end
  return out
end

function init(args)
  coes = split(args[1])
  actions = split(args[2])
  token = os.getenv("BENCH_TOKEN")
  own = coes[(id % #coes) + 1]
  version = nil
  counter = 0
  conflicts = 0
  fivexx = 0
  pending = {}
  math.randomseed(id * 7919 + os.time())
end

local function headers(extra)
  local h = {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}
  for k, v in pairs(extra or {}) do h[k] = v end
  return h
end

function request()
  counter = counter + 1
  local r = math.random(100)
  local coe = coes[math.random(#coes)]
  if r <= 40 then
    return wrk.format("GET", "/api/v1/coes/" .. coe, headers())
  elseif r <= 60 then
    return wrk.format("GET", "/api/v1/coes?limit=20", headers())
  elseif r <= 70 then
    return wrk.format("GET", "/api/v1/stats", headers())
  elseif r <= 85 then
    -- Each thread edits its own COE, with the version its answers last showed.
    local v = version or "1"
    return wrk.format("PUT", "/api/v1/coes/" .. own .. "/sections/summary",
      headers({["If-Match"] = '"' .. v .. '"'}),
      string.format('{"body":"Edit %d-%d: the pool ran dry after the deploy."}', id, counter))
  else
    local a = actions[math.random(#actions)]
    local verb = (math.random(2) == 1) and "start" or "reopen"
    local body = (verb == "reopen") and '{"note":"Back to open for the benchmark"}' or '{}'
    return wrk.format("POST", "/api/v1/actions/" .. a .. "/" .. verb, headers(), body)
  end
end

function response(status, hdrs, body)
  local etag = hdrs["ETag"] or hdrs["etag"]
  if etag and body and string.find(body, own, 1, true) then
    local v = tonumber((string.gsub(etag, '[W/"]', "")))
    if v and (version == nil or v > tonumber(version)) then version = tostring(v) end
  end
  if status == 409 or status == 412 then
    conflicts = conflicts + 1
  elseif status >= 500 then
    fivexx = fivexx + 1
  end
end

function done(summary, latency, requests)
  local c, f = 0, 0
  for _, t in ipairs(threads) do
    c = c + (t:get("conflicts") or 0)
    f = f + (t:get("fivexx") or 0)
  end
  report(summary, latency, {conflicts = c, fivexx = f})
end
