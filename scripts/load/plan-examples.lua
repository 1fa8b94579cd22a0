-- wrk script: POST /v1/plan with the bundled example workloads in turn (as
-- TOML), and count the answers by status. The example list comes from
-- $GPUPLAN_LOAD_EXAMPLES (space-separated paths), set by scripts/load-test.sh.
local bodies = {}
local paths = {}
for path in string.gmatch(os.getenv("GPUPLAN_LOAD_EXAMPLES") or "", "%S+") do
  local f = assert(io.open(path, "rb"))
  bodies[#bodies + 1] = f:read("*a")
  paths[#paths + 1] = path
  f:close()
end
assert(#bodies > 0, "GPUPLAN_LOAD_EXAMPLES names no file")

local query = os.getenv("GPUPLAN_LOAD_QUERY") or ""
-- Each wrk thread stops after this many answers (the total is threads × it).
local per_thread = tonumber(os.getenv("GPUPLAN_LOAD_PER_THREAD") or "0")
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  sent = id
  answered = 0
  ok = 0
  overloaded = 0
  other = 0
end

function request()
  sent = sent + 1
  local body = bodies[(sent % #bodies) + 1]
  return wrk.format("POST", "/v1/plan" .. query, { ["Content-Type"] = "application/toml" }, body)
end

function response(status, headers, body)
  answered = answered + 1
  if status == 200 then
    ok = ok + 1
  elseif status == 503 then
    overloaded = overloaded + 1
  else
    other = other + 1
  end
  if per_thread > 0 and answered >= per_thread then
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local n_ok, n_503, n_other = 0, 0, 0
  for _, thread in ipairs(threads) do
    n_ok = n_ok + thread:get("ok")
    n_503 = n_503 + thread:get("overloaded")
    n_other = n_other + thread:get("other")
  end
  local seconds = summary.duration / 1e6
  io.write(string.format("examples %d; requests %d in %.1f s = %.2f req/s\n",
    #bodies, summary.requests, seconds, summary.requests / seconds))
  io.write(string.format("latency ms: p50 %.0f  p90 %.0f  p99 %.0f  max %.0f  mean %.0f\n",
    latency:percentile(50) / 1e3, latency:percentile(90) / 1e3, latency:percentile(99) / 1e3,
    latency.max / 1e3, latency.mean / 1e3))
  io.write(string.format("status 200: %d; 503: %d; other: %d\n", n_ok, n_503, n_other))
  io.write(string.format("socket errors: connect %d read %d write %d timeout %d\n",
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout))
end
