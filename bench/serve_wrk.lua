-- The load of bench_serve for wrk: POSTs the JSON bodies of the file WRK_BODIES (one body a line)
-- round robin to WRK_PATH (default /v1/embeddings), and prints one JSON line when done: requests,
-- duration, latency percentiles (microseconds) and errors (socket errors and non-2xx answers).
local bodies = {}
for line in io.lines(os.getenv("WRK_BODIES")) do
  bodies[#bodies + 1] = line
end
local path = os.getenv("WRK_PATH") or "/v1/embeddings"
local headers = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. (os.getenv("WRK_KEY") or "none") }
local counter = math.random(#bodies)

request = function()
  counter = counter % #bodies + 1
  return wrk.format("POST", path, headers, bodies[counter])
end

done = function(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "p50_us": %.1f, "p90_us": %.1f, "p99_us": %.1f, "mean_us": %.1f, ' ..
    '"max_us": %.1f, "socket_errors": %d, "non_2xx": %d, "timeouts": %d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean, latency.max, errors.connect + errors.read + errors.write, errors.status, errors.timeout))
end
