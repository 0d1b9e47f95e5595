-- wrk script of the Sluice benchmark (bench/run.ts): every request is a POST of
-- one fixed JSON body. Environment:
--   BENCH_BODY_FILE  path of the JSON body
--   BENCH_HEADERS    extra request headers, one "name: value" per line
--   BENCH_REPORT     path where done() writes its summary as one JSON object
--   BENCH_PAUSE_MS   optional: each connection waits this long after an answer
--                    before its next request (a paced, open load; wrk's delay())
-- Latencies in the report are microseconds; status_errors counts answers with
-- an HTTP status above 399 (wrk's "Non-2xx or 3xx responses").

local function read_file(path)
  local file = assert(io.open(path, "rb"), "cannot open BENCH_BODY_FILE " .. tostring(path))
  local text = file:read("*a")
  file:close()
  return text
end

wrk.method = "POST"
wrk.body = read_file(os.getenv("BENCH_BODY_FILE"))
wrk.headers["Content-Type"] = "application/json"
for name, value in string.gmatch(os.getenv("BENCH_HEADERS") or "", "([^:\n]+):%s*([^\n]*)") do
  wrk.headers[name] = value
end

local pause = tonumber(os.getenv("BENCH_PAUSE_MS") or "0") or 0
if pause > 0 then
  function delay()
    return pause
  end
end

function done(summary, latency, requests)
  local out = assert(io.open(os.getenv("BENCH_REPORT"), "w"))
  out:write(string.format(
    '{"requests":%.0f,"duration_us":%.0f,"bytes":%.0f,"p50_us":%.0f,"p99_us":%.0f,"max_us":%.0f,' ..
      '"status_errors":%.0f,"connect_errors":%.0f,"read_errors":%.0f,"write_errors":%.0f,"timeouts":%.0f}',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(99), latency.max,
    summary.errors.status, summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout
  ))
  out:close()
end
