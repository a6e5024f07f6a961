
local cur = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if cur ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
if ARGV[5] ~= '' and redis.call('HINCRBY', KEYS[3], ARGV[5], -1) <= 0 then
  redis.call('HDEL', KEYS[3], ARGV[5])
end
if ARGV[6] ~= '' then redis.call('HINCRBY', KEYS[3], ARGV[6], 1) end
return 1
