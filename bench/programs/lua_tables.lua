-- The default-build bench's Lua workload (xtask/src/bench/default.rs): a table-and-string
-- script, the shape of tests/fixtures/real/lua_script.lua repeated over larger data (about
-- half a second natively): word frequencies, sorting, string building and matching,
-- closures, coroutines and the collector.
local seed = 12345
local function rand(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % n
end
local syll = { "ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi" }
checksum = 0
for round = 1, 6 do
  local words = {}
  for i = 1, 60000 do
    local parts = {}
    for j = 1, 1 + rand(4) do parts[#parts + 1] = syll[1 + rand(#syll)] end
    words[i] = table.concat(parts)
  end
  local freq = {}
  for _, w in ipairs(words) do freq[w] = (freq[w] or 0) + 1 end
  local uniq = {}
  for w, n in pairs(freq) do uniq[#uniq + 1] = { w = w, n = n } end
  table.sort(uniq, function(a, b) if a.n ~= b.n then return a.n > b.n end return a.w < b.w end)
  local buf = {}
  for i = 1, 20000 do buf[#buf + 1] = string.rep(string.char(97 + i % 26), 1 + i % 5) .. i end
  local s = table.concat(buf, ",")
  local digits = 0
  for d in s:gmatch("%d+") do digits = digits + #d end
  local co = coroutine.wrap(function() for i = 1, 20000 do coroutine.yield(i % 97) end end)
  local total = 0
  for _ = 1, 20000 do total = total + co() end
  collectgarbage()
  checksum = (checksum * 31 + #uniq + uniq[1].n + digits + total + round) % 1000000007
end
print("checksum " .. checksum)
