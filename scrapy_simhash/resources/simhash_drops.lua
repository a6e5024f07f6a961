-- Record one dropped near-duplicate, keeping the record bounded (one atomic step).
--
-- KEYS[1] hash: key id of the dropped URL (8 bytes) -> record (u32 time, u8 distance,
--         u16 length of the kept URL, kept URL, dropped URL)
-- KEYS[2] list: key ids in the order they were first recorded (oldest first)
-- ARGV: 1 key id, 2 record, 3 now, 4 ttl secs (0 = none), 5 most records, 6 most
--       deletions in this call
-- Both keys carry the namespace's hash tag, so on a cluster they live on one slot.

local records, order = KEYS[1], KEYS[2]
local now = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local most = tonumber(ARGV[5])
local batch = tonumber(ARGV[6])

if redis.call('HSET', records, ARGV[1], ARGV[2]) == 1 then
  redis.call('RPUSH', order, ARGV[1])
end
local n = redis.call('LLEN', order)
local deleted = 0
while deleted < batch and n > 0 do
  if n <= most then
    -- Within the count: only an expired oldest record goes. A refreshed record keeps its
    -- first place in the list, so its newer time stops the sweep until it expires.
    if ttl <= 0 then
      break
    end
    local value = redis.call('HGET', records, redis.call('LINDEX', order, 0))
    if value and now - struct.unpack('>I4', value) <= ttl then
      break
    end
  end
  redis.call('HDEL', records, redis.call('LPOP', order))
  n = n - 1
  deleted = deleted + 1
end
return deleted
