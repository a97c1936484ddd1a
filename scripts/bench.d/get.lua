-- wrk script for scripts/bench: GET a path (the URL's), with BENCH_TOKEN when set.
-- Prints one JSON line at the end.
dofile(debug.getinfo(1, "S").source:match("@(.*/)") .. "shared.lua")
function init(args)
  local token = os.getenv("BENCH_TOKEN")
  if token and token ~= "" then
    wrk.headers["Authorization"] = "Bearer " .. token
  end
end
