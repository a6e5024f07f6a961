-- Recrawl state of one namespace, kept in buckets of URLs (format 3), each call atomic.
--
-- Layout under PREFIX = "simhash:recrawl:{namespace}:" (one hash tag: one cluster slot):
--   PREFIX.."m"            hash: "format" (3), "bits", "n" (URLs stored)
--   PREFIX.."b"..bucket    list: element 0 is the bucket's slots, 16 bytes a URL (URL id,
--                          8 bytes, then its queue time, a little-endian double); element
--                          i is the record of slot i (u16 URL length, URL, packed state)
--   PREFIX.."due"          sorted set: bucket -> earliest queue time of its URLs
--   PREFIX.."hist"         hash: rate bucket -> pages (the budget policy's histogram)
-- Why: a hash entry and a sorted-set entry per URL cost ~250 bytes of Redis' own overhead
-- beside a ~165-byte record. A list holds its items back to back (2-3 bytes each), and
-- a bucket of ~60 URLs costs one key and one sorted-set entry. Buckets are named by the
-- leading bits of their URLs' ids as hex digits of a fixed width (bits in "bits"). A URL is
-- found by its id among the slots in C (string.find), then its record by position.
--
-- KEYS: 1 meta hash, 2 due set, 3 histogram; bucket keys are PREFIX.."b"..bucket (same tag).
-- ARGV[1] mode, ARGV[2] prefix; then per mode:
--   get     3 bucket, 4 id, 5 url                -> record or false
--   update  3 bucket, 4 id, 5 url, 6 record read ('' = none), 7 new record, 8 queue
--           time, 9 old rate bucket, 10 new rate bucket ('' = none)  -> 1, or 0 if the
--           record changed since it was read
--   add     3.. (bucket, id, url, record, queue time, rate bucket) each -> URLs added
--   remove  3 bucket, 4 id, 5 url, 6 rate bucket -> 1 if it was stored
--   claim   3 now, 4 limit, 5 lease until ('' = look only), 6 bucket bits -> flat
--           (record, queue time as 8 bytes) of the earliest due, earliest first

local SLOT = 16
local mode, prefix = ARGV[1], ARGV[2]
local meta, due, hist = KEYS[1], KEYS[2], KEYS[3]
local sub, pack, unpack = string.sub, struct.pack, struct.unpack

-- Calls `visit(i, id, queue time)` for each slot, unpacking many slots per call.
local function each_slot(slots, visit)
  local n, i = #slots / SLOT, 1
  while i <= n do
    local m = math.min(n - i + 1, 500)
    local v = { unpack('<' .. string.rep('c8d', m), slots, (i - 1) * SLOT + 1) }
    for j = 0, m - 1 do
      visit(i + j, v[2 * j + 1], v[2 * j + 2])
    end
    i = i + m
  end
end

-- The slot of (id, url) in a bucket, its record, and the bucket's slots.
local function locate(key, id, url)
  local slots = redis.call('LINDEX', key, 0)
  if not slots then
    return nil, nil, ''
  end
  local from = 1
  while true do
    local at = string.find(slots, id, from, true)
    if not at then
      return nil, nil, slots
    end
    if (at - 1) % SLOT == 0 then
      local i = (at - 1) / SLOT + 1
      local record = redis.call('LINDEX', key, i)
      local length = unpack('<H', record)
      if sub(record, 3, 2 + length) == url then
        return i, record, slots
      end
    end
    from = at + 1
  end
end

local function earliest(slots)
  local low = nil
  each_slot(slots, function(_, _, q)
    if low == nil or q < low then
      low = q
    end
  end)
  return low
end

-- Write a bucket's slots back and keep its place in the due set.
local function settle(key, bucket, slots)
  if #slots == 0 then
    redis.call('DEL', key)
    redis.call('ZREM', due, bucket)
  else
    redis.call('LSET', key, 0, slots)
    redis.call('ZADD', due, earliest(slots), bucket)
  end
end

local function count_rate(bucket, delta)
  if bucket ~= '' and redis.call('HINCRBY', hist, bucket, delta) <= 0 then
    redis.call('HDEL', hist, bucket)
  end
end

-- Store a URL not in its bucket yet.
local function append(key, bucket, slots, id, record, queue)
  local slot = id .. pack('<d', tonumber(queue))
  if slots == '' then
    redis.call('RPUSH', key, slot, record)
  else
    redis.call('LSET', key, 0, slots .. slot)
    redis.call('RPUSH', key, record)
  end
  local low = redis.call('ZSCORE', due, bucket)
  if not low or tonumber(queue) < tonumber(low) then
    redis.call('ZADD', due, queue, bucket)
  end
  redis.call('HINCRBY', meta, 'n', 1)
end

if mode == 'get' then
  local _, record = locate(prefix .. 'b' .. ARGV[3], ARGV[4], ARGV[5])
  return record or false
end

if mode == 'update' then
  local bucket = ARGV[3]
  local key = prefix .. 'b' .. bucket
  local i, record, slots = locate(key, ARGV[4], ARGV[5])
  if (record or '') ~= ARGV[6] then
    return 0
  end
  if i then
    redis.call('LSET', key, i, ARGV[7])
    settle(key, bucket, sub(slots, 1, (i - 1) * SLOT) .. ARGV[4] .. pack('<d', tonumber(ARGV[8]))
      .. sub(slots, i * SLOT + 1))
  else
    append(key, bucket, slots, ARGV[4], ARGV[7], ARGV[8])
  end
  count_rate(ARGV[9], -1)
  count_rate(ARGV[10], 1)
  return 1
end

if mode == 'add' then
  local added = 0
  for a = 3, #ARGV, 6 do
    local bucket = ARGV[a]
    local key = prefix .. 'b' .. bucket
    local i, _, slots = locate(key, ARGV[a + 1], ARGV[a + 2])
    if not i then
      append(key, bucket, slots, ARGV[a + 1], ARGV[a + 3], ARGV[a + 4])
      count_rate(ARGV[a + 5], 1)
      added = added + 1
    end
  end
  return added
end

if mode == 'remove' then
  local bucket = ARGV[3]
  local key = prefix .. 'b' .. bucket
  local i, _, slots = locate(key, ARGV[4], ARGV[5])
  if not i then
    return 0
  end
  -- The last slot and record take the place of the removed ones.
  local n = #slots / SLOT
  if i < n then
    redis.call('LSET', key, i, redis.call('LINDEX', key, n))
    slots = sub(slots, 1, (i - 1) * SLOT) .. sub(slots, (n - 1) * SLOT + 1) .. sub(slots, i * SLOT + 1)
  end
  slots = sub(slots, 1, (n - 1) * SLOT)
  redis.call('RPOP', key)
  settle(key, bucket, slots)
  redis.call('HINCRBY', meta, 'n', -1)
  count_rate(ARGV[6], -1)
  return 1
end

if mode == 'claim' then
  -- The earliest due first, ties in URL-id order. Buckets come in order of their earliest
  -- queue time, then of their number (the first two bytes of their URLs' ids, as four hex
  -- digits); once `limit` URLs are found, a bucket that comes after the last of them in
  -- that order cannot hold an earlier one, nor can any bucket after it.
  local now, limit, lease = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
  local bits = tonumber(ARGV[6])
  local name = '%0' .. math.floor((bits + 3) / 4) .. 'x'
  local function bucket_of(id)
    local b1, b2, b3 = string.byte(id, 1, 3)
    return string.format(name, math.floor((b1 * 65536 + b2 * 256 + b3) / 2 ^ (24 - bits)))
  end
  local found, offset, last = {}, 0, nil
  local function before(a, b)
    if a[1] ~= b[1] then return a[1] < b[1] end
    return a[4] < b[4]
  end
  while limit > 0 do
    local rows = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'WITHSCORES', 'LIMIT', offset, limit)
    if #rows == 0 then break end
    for r = 1, #rows, 2 do
      local bucket, low = rows[r], tonumber(rows[r + 1])
      if last and (low > last[1] or (low == last[1] and bucket > bucket_of(last[4]))) then
        rows = nil
        break
      end
      local slots = redis.call('LINDEX', prefix .. 'b' .. bucket, 0) or ''
      each_slot(slots, function(i, id, q)
        if q <= now then
          found[#found + 1] = { q, bucket, i, id }
        end
      end)
      if #found >= limit then
        table.sort(found, before)
        for j = #found, limit + 1, -1 do
          found[j] = nil
        end
        last = found[limit]
      end
    end
    if rows == nil then break end
    offset = offset + #rows / 2
  end
  table.sort(found, before)
  local out, touched = {}, {}
  for _, f in ipairs(found) do
    local key = prefix .. 'b' .. f[2]
    local slots = touched[f[2]] or redis.call('LINDEX', key, 0)
    local at = (f[3] - 1) * SLOT
    out[#out + 1] = redis.call('LINDEX', key, f[3])
    out[#out + 1] = sub(slots, at + 9, at + SLOT) -- the queue time as stored
    if lease ~= '' then
      touched[f[2]] = sub(slots, 1, at + 8) .. pack('<d', tonumber(lease)) .. sub(slots, at + SLOT + 1)
    end
  end
  for bucket, slots in pairs(touched) do
    settle(prefix .. 'b' .. bucket, bucket, slots)
  end
  return out
end

return redis.error_reply('ERR unknown recrawl mode ' .. tostring(mode))
