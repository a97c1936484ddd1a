-- Shared by the wrk scripts of scripts/bench (each runs it first): threads numbered
-- (`id` in each thread, `threads` in `done`), and the one JSON line each script prints
-- at the end (`report`; `extra` adds fields, numbers; `done` by default).
threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function report(summary, latency, extra)
  local e = summary.errors
  local fields = ""
  for k, v in pairs(extra or {}) do fields = fields .. string.format(',"%s":%d', k, v) end
  io.write(string.format(
    '{"requests":%d,"seconds":%f,"errors":%d,"non2xx":%d,"p50_ms":%f,"p99_ms":%f%s}\n',
    summary.requests, summary.duration / 1e6, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, fields))
end

function done(summary, latency, requests)
  report(summary, latency)
end
