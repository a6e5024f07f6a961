
local urls = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[2])
local out = {}
for i = 1, #urls, 2 do
  redis.call('ZADD', KEYS[2], ARGV[3], urls[i])
  out[#out + 1] = urls[i]
  out[#out + 1] = redis.call('HGET', KEYS[1], urls[i]) or ''
  out[#out + 1] = urls[i + 1]
end
return out
