-- wrk script for scripts/bench: GET a path (the URL's), with BENCH_TOKEN when set.
-- Prints one JSON line at the end.
function init(args)
  local token = os.getenv("BENCH_TOKEN")
  if token and token ~= "" then
    wrk.headers["Authorization"] = "Bearer " .. token
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"seconds":%f,"errors":%d,"non2xx":%d,"p50_ms":%f,"p99_ms":%f}\n',
    summary.requests, summary.duration / 1e6, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
