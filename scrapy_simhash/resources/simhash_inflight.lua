-- Filings in flight (scrapy_simhash/index/inflight.py): one hash per namespace,
-- KEYS[1] = "simhash:{namespace}:f", field = the page's key, value = "owner|since".
-- ARGV: mode ("hold" | "settle"), key, owner, now, lease, create ("1" | "0").
-- hold: the same rule as inflight.decide; replies {state, owner met, age}.
-- settle: deletes the mark if it is owner's; replies 1 or 0.
local marks, mode, field, owner = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local current = redis.call('HGET', marks, field)
local other, since = nil, nil
if current then
  local bar = string.find(current, '|', 1, true)
  other = string.sub(current, 1, bar - 1)
  since = tonumber(string.sub(current, bar + 1))
end
if mode == 'settle' then
  if other == owner then
    return redis.call('HDEL', marks, field)
  end
  return 0
end
local now, lease, create = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1'
local mine = owner .. '|' .. ARGV[4]
if not current then
  if create then
    redis.call('HSET', marks, field, mine)
  end
  return {'free', '', '0'}
end
local age = now - since
if other == owner then
  redis.call('HSET', marks, field, mine)
  return {'mine', other, tostring(age)}
end
if age < lease then
  return {'busy', other, tostring(age)}
end
redis.call('HSET', marks, field, mine)
return {'taken', other, tostring(age)}
