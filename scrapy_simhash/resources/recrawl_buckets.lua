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
--   claim   3 now, 4 limit, 5 lease until ('' = look only), 6 bucket bits -> flat
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
  -- The earliest due first, ties in URL-id order: a merge of the buckets' queues (each a
  -- sorted set, read two entries at a time), whose heads the due set gives in order of
  -- queue time, then of bucket name (as their ids sort). Nothing is written until the
  -- merge is done (a lease moves entries, hence ranks); a bucket's new place in the due
  -- set is the earlier of the lease and its first entry not handed out, already read.
  local now, limit, lease = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
  local bits = tonumber(ARGV[6])
  local name = '%0' .. math.floor((bits + 3) / 4) .. 'x'
  local function bucket_of(id)
    local b1, b2, b3 = string.byte(id, 1, 3)
    return string.format(name, math.floor((b1 * 65536 + b2 * 256 + b3) / 2 ^ (24 - bits)))
  end
  local function before(a, b)
    if a[1] ~= b[1] then return a[1] < b[1] end
    return a[3] < b[3]
  end
  -- A binary heap of cursors {queue time, bucket, member, time text, rank, next}, where
  -- next is the entry after (member, time text), false at the end, nil when not read.
  local heap = {}
  local function push(c)
    heap[#heap + 1] = c
    local i = #heap
    while i > 1 do
      local up = math.floor(i / 2)
      if not before(heap[i], heap[up]) then break end
      heap[i], heap[up] = heap[up], heap[i]
      i = up
    end
  end
  local function pop()
    local top = heap[1]
    heap[1] = heap[#heap]
    heap[#heap] = nil
    local i = 1
    while true do
      local l, r, m = 2 * i, 2 * i + 1, i
      if l <= #heap and before(heap[l], heap[m]) then m = l end
      if r <= #heap and before(heap[r], heap[m]) then m = r end
      if m == i then break end
      heap[i], heap[m] = heap[m], heap[i]
      i = m
    end
    return top
  end
  -- rest[bucket]: the time text of its first entry not handed out (false: none left).
  local rest = {}
  -- Continue `bucket`'s queue at `rank` with `entry` ({member, time text}; nil: read it
  -- and the next; false: the queue ends): a cursor if it is due, else where it stops.
  local function follow(bucket, rank, entry, after)
    if entry == nil then
      local e = redis.call('ZRANGE', prefix .. 'q' .. bucket, rank, rank + 1, 'WITHSCORES')
      entry = e[1] and { e[1], e[2] } or false
      after = e[3] and { e[3], e[4] } or false
    end
    if not entry then
      rest[bucket] = false
      return
    end
    local time = tonumber(entry[2])
    if time > now then
      rest[bucket] = entry[2]
      return
    end
    push({ time, bucket, entry[1], entry[2], rank, after })
  end
  local found, rows, row, offset = {}, {}, 1, 0
  while #found < limit do
    if row > #rows and offset >= 0 then
      rows = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'WITHSCORES', 'LIMIT', offset, limit)
      row = 1
      offset = #rows == 0 and -1 or offset + #rows / 2
    end
    local top = heap[1]
    local head = rows[row]
    if head and (not top or tonumber(rows[row + 1]) < top[1] or
        (tonumber(rows[row + 1]) == top[1] and head < bucket_of(top[3]))) then
      follow(head, 0, nil)
      row = row + 2
    elseif top then
      pop()
      found[#found + 1] = top
      follow(top[2], top[5] + 1, top[6], nil)
    else
      break
    end
  end
  for _, c in ipairs(heap) do
    rest[c[2]] = c[4]
  end
  local out, places = {}, {}
  for _, f in ipairs(found) do
    local bucket, entry = f[2], f[3]
    out[#out + 1] = redis.call('LINDEX', prefix .. 'b' .. bucket, (unpack('>H', entry, ID + 1)))
    out[#out + 1] = f[4]
    if lease ~= '' then
      redis.call('ZADD', prefix .. 'q' .. bucket, lease, entry)
      places[bucket] = true
    end
  end
  local moved = {}
  for bucket in pairs(places) do
    local left = rest[bucket]
    moved[#moved + 1] = (left and tonumber(left) < tonumber(lease)) and left or lease
    moved[#moved + 1] = bucket
  end
  for i = 1, #moved, 1000 do  -- within Lua's limit of arguments to one call
    redis.call('ZADD', due, spread(moved, i, math.min(i + 999, #moved)))
  end
  return out
end

return redis.error_reply('ERR unknown recrawl mode ' .. tostring(mode))
