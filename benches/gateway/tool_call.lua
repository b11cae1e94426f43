-- wrk script: POST one tool-call decision request per request, with the bearer token.
-- TOKEN comes from the environment; each request reads a different path (distinct arguments).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("TOKEN") or "bench")
local n = 0
request = function()
  n = n + 1
  local body = '{"tool":"fs.read_file","arguments":{"path":"src/file' .. (n % 1000) .. '.rs"}}'
  return wrk.format(nil, nil, nil, body)
end
