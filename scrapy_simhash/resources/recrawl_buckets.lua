-- Recrawl state of one namespace, kept in buckets of URLs (format 3), each call atomic.
--
-- Layout under PREFIX = "simhash:recrawl:{namespace}:" (one hash tag: one cluster slot):
--   PREFIX.."m"            hash: "format" (3), "bits", "n" (URLs stored)
--   PREFIX.."b"..bucket    list: element 0 is the bucket's URL ids, 8 bytes each; element
--                          i is the record of the i-th id (u16 URL length, URL, packed
--                          state)
--   PREFIX.."q"..bucket    sorted set: URL id and the position of its record (2 bytes,
--                          big-endian) -> queue time (when it is next handed out, in
--                          whole milliseconds: a listpack keeps those as integers, and
--                          any other score as text it parses again on every insertion)
--   PREFIX.."due"          sorted set: bucket -> earliest queue time of its URLs
--   PREFIX.."hist"         hash: rate bucket -> pages (the budget policy's histogram)
-- Why: a hash entry and a sorted-set entry per URL cost ~250 bytes of Redis' own overhead
-- beside a ~130-byte record. A list holds its items back to back (2-3 bytes each), and a
-- sorted set of up to 128 members is one listpack (~20 bytes a member), so a bucket of ~60
-- URLs costs two keys and one entry of the due set. Buckets are named by the leading bits
-- of their URLs' ids as hex digits of a fixed width ("bits"), so buckets sort as their
-- ids do. A URL is found by its id among the bucket's ids in C (string.find), then its
-- record by position; queue times are ordered by Redis, in C, within a bucket and across,
-- and a queue entry names its record's position, so a claim reads the record directly.
--
-- KEYS: 1 meta hash, 2 due set, 3 histogram; bucket keys are PREFIX.."b"/"q"..bucket.
-- ARGV[1] mode, ARGV[2] prefix; then per mode:
--   get     3 bucket, 4 id, 5 url                -> record or false
--   update  3 bucket, 4 id, 5 url, 6 record read ('' = none), 7 new record, 8 queue
--           time, 9 old rate bucket, 10 new rate bucket ('' = none)  -> 1, or 0 if the
--           record changed since it was read
--   add     3.. (bucket, id, url, record, queue time, rate bucket) each -> URLs added
--   remove  3 bucket, 4 id, 5 url, 6 rate bucket -> 1 if it was stored
--   claim   3 now, 4 limit, 5 lease until ('' = look only) -> flat
--           (record, queue time) of the earliest due, earliest first, ties in id order

local ID = 8
local mode, prefix = ARGV[1], ARGV[2]
local meta, due, hist = KEYS[1], KEYS[2], KEYS[3]
local spread = unpack  -- a table's items as arguments
local sub, pack, unpack = string.sub, struct.pack, struct.unpack

-- A URL's entry in its bucket's queue: its id, then where its record is.
local function member(id, i)
  if i > 65535 then
    error('a recrawl bucket holds at most 65,535 URLs; set `expected_pages` for the crawl and regroup the namespace')
  end
  return id .. pack('>H', i)
end

-- The position of `id` among a bucket's ids from position `after` on (nil: none).
local function position(ids, id, after)
  local from = (after or 0) * ID + 1
  while true do
    local at = string.find(ids, id, from, true)
    if not at then
      return nil
    end
    if (at - 1) % ID == 0 then
      return (at - 1) / ID + 1
    end
    from = at + 1
  end
end

-- The position of (id, url) in a bucket, its record, and the bucket's ids.
local function locate(key, id, url)
  local ids = redis.call('LINDEX', key, 0)
  if not ids then
    return nil, nil, ''
  end
  local i = position(ids, id)
  while i do
    local record = redis.call('LINDEX', key, i)
    local length = unpack('<H', record)
    if sub(record, 3, 2 + length) == url then
      return i, record, ids
    end
    i = position(ids, id, i)
  end
  return nil, nil, ids
end

-- Keep a bucket's place in the due set: its earliest queue time, or gone when empty.
local function refresh(bucket)
  local low = redis.call('ZRANGE', prefix .. 'q' .. bucket, 0, 0, 'WITHSCORES')
  if #low == 0 then
    redis.call('ZREM', due, bucket)
  else
    redis.call('ZADD', due, low[2], bucket)
  end
end

local function count_rate(bucket, delta)
  if bucket ~= '' and redis.call('HINCRBY', hist, bucket, delta) <= 0 then
    redis.call('HDEL', hist, bucket)
  end
end

-- Store a URL not in its bucket yet.
local function append(bucket, ids, id, record, queue)
  local key = prefix .. 'b' .. bucket
  local entry = member(id, #ids / ID + 1)
  if ids == '' then
    redis.call('RPUSH', key, id, record)
  else
    redis.call('LSET', key, 0, ids .. id)
    redis.call('RPUSH', key, record)
  end
  redis.call('ZADD', prefix .. 'q' .. bucket, queue, entry)
  redis.call('HINCRBY', meta, 'n', 1)
end

if mode == 'get' then
  local _, record = locate(prefix .. 'b' .. ARGV[3], ARGV[4], ARGV[5])
  return record or false
end

if mode == 'update' then
  local bucket, id = ARGV[3], ARGV[4]
  local key = prefix .. 'b' .. bucket
  local i, record, ids = locate(key, id, ARGV[5])
  if (record or '') ~= ARGV[6] then
    return 0
  end
  if i then
    redis.call('LSET', key, i, ARGV[7])
    redis.call('ZADD', prefix .. 'q' .. bucket, ARGV[8], member(id, i))
  else
    append(bucket, ids, id, ARGV[7], ARGV[8])
  end
  refresh(bucket)
  count_rate(ARGV[9], -1)
  count_rate(ARGV[10], 1)
  return 1
end

if mode == 'add' then
  local added, touched = 0, {}
  for a = 3, #ARGV, 6 do
    local bucket = ARGV[a]
    local i, _, ids = locate(prefix .. 'b' .. bucket, ARGV[a + 1], ARGV[a + 2])
    if not i then
      append(bucket, ids, ARGV[a + 1], ARGV[a + 3], ARGV[a + 4])
      count_rate(ARGV[a + 5], 1)
      touched[bucket] = true
      added = added + 1
    end
  end
  for bucket in pairs(touched) do
    refresh(bucket)
  end
  return added
end

if mode == 'remove' then
  local bucket, id = ARGV[3], ARGV[4]
  local key = prefix .. 'b' .. bucket
  local i, _, ids = locate(key, id, ARGV[5])
  if not i then
    return 0
  end
  -- The last id and record take the place of the removed ones.
  local n, queue = #ids / ID, prefix .. 'q' .. bucket
  redis.call('ZREM', queue, member(id, i))
  if i < n then
    local last = sub(ids, (n - 1) * ID + 1)
    local time = redis.call('ZSCORE', queue, member(last, n))
    redis.call('ZREM', queue, member(last, n))
    redis.call('ZADD', queue, time, member(last, i))
    redis.call('LSET', key, i, redis.call('LINDEX', key, n))
    ids = sub(ids, 1, (i - 1) * ID) .. last .. sub(ids, i * ID + 1)
  end
  ids = sub(ids, 1, (n - 1) * ID)
  if ids == '' then
    redis.call('DEL', key)
  else
    redis.call('RPOP', key)
    redis.call('LSET', key, 0, ids)
  end
  refresh(bucket)
  redis.call('HINCRBY', meta, 'n', -1)
  count_rate(ARGV[6], -1)
  return 1
end

if mode == 'claim' then
  -- The earliest due first, ties in URL-id order. The due set orders the buckets by their
  -- first queue time, ties by name (as their ids sort), so its first `limit` rows due,
  -- up to the time `cutoff` of the last, hold every URL a claim can take: `limit` heads
  -- at or before the cutoff, and any bucket after those rows starts after them. Of the
  -- k-th row's bucket, only entries up to the cutoff and of rank limit - k at most can
  -- be taken (k - 1 heads come before them): those are read with the entry after them,
  -- a window of two first, then sorted once by (queue time, bucket, rank). Nothing is
  -- written until then (a lease moves entries, hence ranks); a bucket's new place in the
  -- due set is the earlier of the lease and its first entry not handed out, already read.
  local now, limit, lease = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
  local rows = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
  local count = #rows / 2
  if count == 0 then
    return {}
  end
  local cutoff = count == limit and tonumber(rows[#rows]) or now
  -- found: {queue time, bucket row, rank, member, time text}; times[k]: the time texts
  -- read of row k's bucket, by rank from 1.
  local found, times = {}, {}
  for k = 1, count do
    local queue, last = prefix .. 'q' .. rows[2 * k - 1], limit - k
    local read, rank, width = {}, 0, 2
    times[k] = read
    local more = true
    while more do
      local stop = math.min(rank + width - 1, last + 1)
      local e = redis.call('ZRANGE', queue, rank, stop, 'WITHSCORES')
      more = #e == 2 * (stop - rank + 1)
      for i = 1, #e, 2 do
        local text = e[i + 1]
        read[rank + 1] = text
        local time = tonumber(text)
        if rank > last or time > cutoff then
          more = false
          break
        end
        found[#found + 1] = { time, k, rank, e[i], text }
        rank = rank + 1
      end
      width = width * 2
    end
  end
  -- Rows of one queue time are in bucket order already, and a bucket's entries in rank
  -- order: sort only when some bucket gave more than its head.
  if #found > count then
    local number = {}
    for k = 1, count do
      number[k] = tonumber(rows[2 * k - 1], 16)
    end
    table.sort(found, function(a, b)
      if a[1] ~= b[1] then return a[1] < b[1] end
      if a[2] ~= b[2] then return number[a[2]] < number[b[2]] end
      return a[3] < b[3]
    end)
  end
  local out, taken = {}, {}
  for i = 1, math.min(limit, #found) do
    local f = found[i]
    local k, entry = f[2], f[4]
    local bucket = rows[2 * k - 1]
    out[#out + 1] = redis.call('LINDEX', prefix .. 'b' .. bucket, (unpack('>H', entry, ID + 1)))
    out[#out + 1] = f[5]
    if lease ~= '' then
      redis.call('ZADD', prefix .. 'q' .. bucket, lease, entry)
      taken[k] = (taken[k] or 0) + 1
    end
  end
  local moved = {}
  for k, n in pairs(taken) do
    local left = times[k][n + 1]
    moved[#moved + 1] = (left and tonumber(left) < tonumber(lease)) and left or lease
    moved[#moved + 1] = rows[2 * k - 1]
  end
  for i = 1, #moved, 1000 do  -- within Lua's limit of arguments to one call
    redis.call('ZADD', due, spread(moved, i, math.min(i + 999, #moved)))
  end
  return out
end

return redis.error_reply('ERR unknown recrawl mode ' .. tostring(mode))
