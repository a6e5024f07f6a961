
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if ARGV[2] ~= '' and redis.call('HINCRBY', KEYS[3], ARGV[2], -1) <= 0 then
  redis.call('HDEL', KEYS[3], ARGV[2])
end
return 1
