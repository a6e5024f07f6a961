
local added = 0
for i = 1, #ARGV, 4 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('ZADD', KEYS[2], ARGV[i + 2], ARGV[i])
    if ARGV[i + 3] ~= '' then redis.call('HINCRBY', KEYS[3], ARGV[i + 3], 1) end
    added = added + 1
  end
end
return added
