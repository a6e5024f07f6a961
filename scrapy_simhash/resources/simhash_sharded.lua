#!lua name=__LIBRARY__
-- One shard of a sharded namespace (index/sharded.py), sharded layout 3: a Redis Functions
-- library, loaded once per master (FUNCTION LOAD), so a call runs only its mode, not the
-- definitions below (an EVAL script re-creates every function and table on each call).
--
-- Layout under PREFIX = "simhash:{<shard tag>}:":
--   PREFIX.."m"               hash: "config" (JSON record), "cid" (its digest), "n" (entries
--                             whose home is this shard), and the page locks: field
--                             "l"..table..band value or "k"..key id, value token..":"..
--                             deadline (server milliseconds)
--   PREFIX.."b"..table..group string: band records (fingerprint .. key id 8 bytes .. last
--                             seen u32), sorted by the table's band; each record lives only
--                             in the shard its (table, band value) is placed in
--   PREFIX.."e"..bucket       string: entry records (key id .. fingerprint .. last seen ..
--                             signature 24 bytes) of the keys whose home is this shard
--   PREFIX.."u"..bucket       list: their key texts, in the same order
-- A band record names its key by id and carries its last-seen time, so a shard answers for
-- its bands alone: the key text and signature are read from the key's home only when a
-- page meets candidates (one more round, the page's locks held: the client judges them by
-- their signatures before it stores anything).
--
-- FCALL <library> 1 <meta> mode cid conf ...: conf packs the layout (u16-length-prefixed
-- prefix, fingerprint bytes, band masks, group masks, entry bucket bits, max distance,
-- ttl); it is parsed once per library load and cached. cid is the digest of the
-- configuration record the client opened (a restarted server without persistence refuses
-- with NORECORD until the client writes its record back).
--   lock   now fp id home tables token lease: all or none of this shard's locks (one per
--          table in `tables`, plus the key's when `home` is "1"); {0} when one is held by
--          another token within its lease, else {1, the key's stored fingerprint or nil
--          (home only), 1 if live, its signature or nil, then (fingerprint, distance, key
--          id) of every record within max distance sharing a band in `tables`, distance
--          -1 if expired}.
--   store  now fp id home tables token text old oldtables sig known: release this call's
--          locks still held under `token`, drop the key's band records of its previous
--          fingerprint `old` in `oldtables`, store its band records in `tables` and (home)
--          its entry, signature and text; {1 if a lock was no longer ours, 1 if a live
--          record within max distance of a key not in `known` (the key ids of the page's
--          candidates, 8 bytes each) was in the way (a writer not taking locks)}.
--   unlock fp id home tables token: release the locks held under `token`.
--   read   ids...: each id .. the fingerprint its band record holds, whose home is here:
--          {key text, signature}, 0 when the key's entry holds other content, nil when it
--          has none.
--   query  now fp tables: as lock, without locks or the key's entry.
--   remove fp id home tables token: release the key's lock (home), drop its entry (home)
--          and its band records of fingerprint fp in `tables`; 1 if the entry existed.
--   expire now fp id home tables: drop the key's entry (home) and its band records of
--          fingerprint fp in `tables` if they expired; 1 if the entry was dropped.
--   purge  now name: drop the expired records of band group or entry bucket `name`;
--          reply the entries dropped.

-- Bound on the first call: loading a library sees no global but redis.
local band, bxor, rshift, pack, sunpack, sub, byte, char, find
local function bind()
  band, bxor, rshift = bit.band, bit.bxor, bit.rshift
  pack, sunpack = struct.pack, struct.unpack
  sub, byte, char, find = string.sub, string.byte, string.char, string.find
end

-- Parsed layouts by conf string (a namespace has one; the cache is bounded anyway).
local layouts, cached = {}, 0

local function parse(conf)
  local c = layouts[conf]
  if c then
    return c
  end
  local f, p = {}, 1
  while p <= #conf do
    local n = sunpack('>I2', conf, p)
    f[#f + 1] = sub(conf, p + 2, p + 1 + n)
    p = p + 2 + n
  end
  c = { prefix = f[1], fpb = tonumber(f[2]), ebits = tonumber(f[5]), limit = tonumber(f[6]),
        ttl = tonumber(f[7]) }
  local fpb = c.fpb
  c.w = fpb / 4
  c.rec = fpb + 12
  c.er = fpb + 36
  c.wfmt = '>' .. string.rep('i4', c.w)
  c.groups, c.keyed, c.masks, c.tprefix = {}, {}, {}, {}
  for t = 1, #f[3] / fpb do
    local m = { sunpack(c.wfmt, f[3], (t - 1) * fpb + 1) }
    m[#m] = nil -- unpack also returns the next position
    local g = { sunpack(c.wfmt, f[4], (t - 1) * fpb + 1) }
    g[#g] = nil
    c.masks[t], c.groups[t] = m, g
    local k = {}
    for i = 1, c.w do
      if m[i] ~= 0 then
        k[#k + 1] = { (i - 1) * 4, m[i], i }
      end
    end
    c.keyed[t] = k
    c.tprefix[t] = c.prefix .. 'b' .. char(t)
  end
  if cached >= 64 then
    layouts, cached = {}, 0
  end
  layouts[conf], cached = c, cached + 1
  return c
end

local function words_of(c, s)
  return { sunpack(c.wfmt, s) }
end

-- Bytes of words ANDed with mask words m.
local function masked(c, words, m)
  if c.w == 2 then
    return pack('>i4i4', band(words[1], m[1]), band(words[2], m[2]))
  end
  local parts = {}
  for i = 1, c.w do
    parts[i] = pack('>i4', band(words[i], m[i]))
  end
  return table.concat(parts)
end

local function group_key(c, t, words)
  return c.tprefix[t] .. masked(c, words, c.groups[t])
end

local function band_of(c, t, words)
  local out, k = {}, c.keyed[t]
  for j = 1, #k do
    out[j] = band(words[k[j][3]], k[j][2])
  end
  return out
end

-- Order of the record at p against band b: -1, 0 or 1 (signed word order).
local function compare_at(c, t, s, p, b)
  local k = c.keyed[t]
  for j = 1, #k do
    local x = band((sunpack('>i4', s, p + k[j][1])), k[j][2])
    if x ~= b[j] then
      return x < b[j] and -1 or 1
    end
  end
  return 0
end

-- Position (1-based) of the first record of s whose band is >= b.
local function lower_bound(c, t, s, b)
  local size = c.rec
  local lo, hi = 0, #s / size
  local k = c.keyed[t]
  if #k == 1 then
    -- One word holds the band (every table of the usual layouts): compare inline.
    local off, m, want = k[1][1] + 1, k[1][2], b[1]
    while lo < hi do
      local mid = rshift(lo + hi, 1)
      if band((sunpack('>i4', s, mid * size + off)), m) < want then
        lo = mid + 1
      else
        hi = mid
      end
    end
    return lo * size + 1
  end
  while lo < hi do
    local mid = rshift(lo + hi, 1)
    if compare_at(c, t, s, mid * size + 1, b) < 0 then
      lo = mid + 1
    else
      hi = mid
    end
  end
  return lo * size + 1
end

-- Start of the record of size `size` holding `needle` at `offset`, or nil.
local function find_record(s, needle, offset, size)
  local init = 1
  while true do
    local p = find(s, needle, init, true)
    if not p then
      return nil
    end
    if (p - 1 - offset) % size == 0 then
      return p - offset
    end
    init = p + 1
  end
end

local function distance_at(c, words, s, p)
  local n, limit = 0, c.limit
  for i = 1, c.w do
    local x = bxor(words[i], (sunpack('>i4', s, p + (i - 1) * 4)))
    while x ~= 0 do
      n = n + 1
      if n > limit then
        return n
      end
      x = band(x, x - 1)
    end
  end
  return n
end

local function expired(c, now, s, p)
  return c.ttl > 0 and (now - sunpack('>I4', s, p)) > c.ttl
end

local function entry_bucket(c, id)
  if c.ebits == 0 then
    return pack('>I2', 0)
  end
  return pack('>I2', math.floor(sunpack('>I4', id) / 2 ^ (32 - c.ebits)))
end

local function put(key, value)
  if #value == 0 then
    redis.call('DEL', key)
  else
    redis.call('SET', key, value)
  end
end

-- Lock fields of a call: one per table in `tables`, then the key's at its home.
local function lock_fields(c, words, tables, id, home)
  local out = {}
  for i = 1, #tables do
    local t = byte(tables, i)
    out[i] = 'l' .. char(t) .. masked(c, words, c.masks[t])
  end
  if home == '1' then
    out[#out + 1] = 'k' .. id
  end
  return out
end

-- The lock fields' values, after checking the configuration digest.
local function read_locks(meta, cid, fields)
  local got = redis.call('HMGET', meta, 'cid', unpack(fields))
  if got[1] ~= cid then
    return nil
  end
  return got
end

local function norecord()
  return redis.error_reply('NORECORD the index configuration record is missing or changed')
end

-- Release the fields held under token; 1 when one was not (its lease ran out and another
-- page took it, or released it).
local function release(meta, fields, got, token)
  local mine, lost = {}, 0
  local tag = token .. ':'
  for i = 1, #fields do
    local v = got[i + 1]
    if v and sub(v, 1, #tag) == tag then
      mine[#mine + 1] = fields[i]
    else
      lost = 1
    end
  end
  if #mine > 0 then
    redis.call('HDEL', meta, unpack(mine))
  end
  return lost
end

-- Live records within max distance in the bands of `tables`: flat (fp, distance, id);
-- with `stale`, the expired ones too, with distance -1.
local function scan(c, now, words, tables, out, stale)
  local seen = {}
  local fpb, rec = c.fpb, c.rec
  for i = 1, #tables do
    local t = byte(tables, i)
    local s = redis.call('GET', group_key(c, t, words))
    if s then
      local b = band_of(c, t, words)
      local p = lower_bound(c, t, s, b)
      while p <= #s and compare_at(c, t, s, p, b) == 0 do
        local d = distance_at(c, words, s, p)
        local id = sub(s, p + fpb, p + fpb + 7)
        if d <= c.limit and not seen[id] then
          if expired(c, now, s, p + fpb + 8) then
            d = stale and -1
          end
          if d then
            seen[id] = true
            out[#out + 1] = sub(s, p, p + fpb - 1)
            out[#out + 1] = d
            out[#out + 1] = id
          end
        end
        p = p + rec
      end
    end
  end
  return out
end

-- Drop the band records of (fingerprint f, key id) in `tables`.
local function unlink(c, f, id, tables)
  local words = words_of(c, f)
  for i = 1, #tables do
    local gk = group_key(c, byte(tables, i), words)
    local s = redis.call('GET', gk)
    local p = s and find_record(s, f .. id, 0, c.rec)
    if p then
      put(gk, sub(s, 1, p - 1) .. sub(s, p + c.rec))
    end
  end
end

-- Forget the entry of key id `id` (home); tell whether it existed.
local function drop_entry(c, meta, id)
  local eb = entry_bucket(c, id)
  local ek = c.prefix .. 'e' .. eb
  local es = redis.call('GET', ek)
  local r = es and find_record(es, id, 0, c.er)
  if not r then
    return false
  end
  put(ek, sub(es, 1, r - 1) .. sub(es, r + c.er))
  local uk = c.prefix .. 'u' .. eb
  redis.call('LSET', uk, (r - 1) / c.er, '')
  redis.call('LREM', uk, 1, '')
  redis.call('HINCRBY', meta, 'n', -1)
  return true
end

local modes = {}

function modes.lock(meta, a)
  local c = parse(a[3])
  local now, fp, id, home, tables, token = tonumber(a[4]), a[5], a[6], a[7], a[8], a[9]
  local words = words_of(c, fp)
  local fields = lock_fields(c, words, tables, id, home)
  local got = read_locks(meta, a[2], fields)
  if not got then
    return norecord()
  end
  local clock = redis.call('TIME')
  local ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local stale = false
  local tag = token .. ':'
  for i = 1, #fields do
    local v = got[i + 1]
    -- A lock already held under this page's token is its own: a call retried after its
    -- reply was lost must not wait behind itself.
    if v and sub(v, 1, #tag) ~= tag then
      if tonumber(string.match(v, ':(%d+)$')) > ms then
        return { 0 }
      end
      stale = true
    end
  end
  if stale then
    -- A lock outlived its lease: its holder died. Sweep every such lock of this shard
    -- (rare, so the whole hash may be read).
    local all = redis.call('HGETALL', meta)
    for i = 1, #all, 2 do
      local kind = byte(all[i], 1)
      if (kind == 108 or kind == 107) and tonumber(string.match(all[i + 1], ':(%d+)$')) <= ms then
        redis.call('HDEL', meta, all[i])
      end
    end
  end
  -- Read first: a call failing half-way keeps its writes, and must leave no lock.
  local own, live, own_sig = false, 0, false
  if home == '1' then
    local es = redis.call('GET', c.prefix .. 'e' .. entry_bucket(c, id))
    local r = es and find_record(es, id, 0, c.er)
    if r then
      own, own_sig = sub(es, r + 8, r + 7 + c.fpb), sub(es, r + 12 + c.fpb, r + c.er - 1)
      live = expired(c, now, es, r + 8 + c.fpb) and 0 or 1
    end
  end
  local out = scan(c, now, words, tables, { 1, own, live, own_sig }, true)
  if #fields > 0 then
    local value = token .. ':' .. string.format('%.0f', ms + tonumber(a[10]))
    local args = {}
    for i = 1, #fields do
      args[2 * i - 1], args[2 * i] = fields[i], value
    end
    redis.call('HSET', meta, unpack(args))
  end
  return out
end

function modes.store(meta, a)
  local c = parse(a[3])
  local now, fp, id, home, tables, token = tonumber(a[4]), a[5], a[6], a[7], a[8], a[9]
  local text, old, oldtables, sig, known = a[10], a[11], a[12], a[13], a[14]
  local words = words_of(c, fp)
  local fields = lock_fields(c, words, tables, id, home)
  local got = read_locks(meta, a[2], fields)
  if not got then
    return norecord()
  end
  local lost = release(meta, fields, got, token)
  local fpb, rec = c.fpb, c.rec
  local stamp = pack('>I4', math.floor(now))
  -- The entry before the band records: a call failing half-way keeps its writes, and a
  -- band record naming a key without an entry is not found.
  if home == '1' then
    local eb = entry_bucket(c, id)
    local ek = c.prefix .. 'e' .. eb
    local es = redis.call('GET', ek) or ''
    local r = find_record(es, id, 0, c.er)
    if r then
      redis.call('SETRANGE', ek, r + 7, fp .. stamp .. sig)
    else
      redis.call('HINCRBY', meta, 'n', 1)
      redis.call('SET', ek, es .. id .. fp .. stamp .. sig)
      redis.call('RPUSH', c.prefix .. 'u' .. eb, text)
    end
  end
  if old ~= '' then
    unlink(c, old, id, oldtables)
  end
  local mine = fp .. id .. stamp
  local stranger = 0
  for i = 1, #tables do
    local t = byte(tables, i)
    local gk = group_key(c, t, words)
    local s = redis.call('GET', gk) or ''
    local b = band_of(c, t, words)
    local p = lower_bound(c, t, s, b)
    -- The records of this band: keep the live ones of other keys, drop expired ones and
    -- this key's (one key, one fingerprint); this page's record goes after them.
    local q, kept, same = p, {}, false
    while q <= #s and compare_at(c, t, s, q, b) == 0 do
      local other = sub(s, q + fpb, q + fpb + 7)
      if other == id then
        -- Unchanged when it is this very record and last-seen times do not matter.
        same = sub(s, q, q + fpb - 1) == fp and (c.ttl == 0 or sub(s, q + fpb + 8, q + rec - 1) == stamp)
      elseif not expired(c, now, s, q + fpb + 8) then
        kept[#kept + 1] = sub(s, q, q + rec - 1)
        if distance_at(c, words, s, q) <= c.limit and not find_record(known, other, 0, 8) then
          stranger = 1
        end
      end
      q = q + rec
    end
    if not (same and #kept == (q - p) / rec - 1) then
      kept[#kept + 1] = mine
      redis.call('SET', gk, sub(s, 1, p - 1) .. table.concat(kept) .. sub(s, q))
    end
  end
  return { lost, stranger }
end

function modes.unlock(meta, a)
  local c = parse(a[3])
  local fp, id, home, tables, token = a[4], a[5], a[6], a[7], a[8]
  local fields = lock_fields(c, words_of(c, fp), tables, id, home)
  local got = read_locks(meta, a[2], fields)
  if not got then
    return norecord()
  end
  release(meta, fields, got, token)
  return 0
end

function modes.read(meta, a)
  if redis.call('HGET', meta, 'cid') ~= a[2] then
    return norecord()
  end
  local c = parse(a[3])
  -- a[4..]: key id .. the fingerprint its band record holds. The entry must hold the same
  -- fingerprint: a band record left behind when its key's home failed to store a newer one
  -- names a page that no longer has that content (reply 0: never a match), where a missing
  -- entry may still be landing (reply false: read again).
  local out = {}
  for i = 4, #a do
    local id = sub(a[i], 1, 8)
    local eb = entry_bucket(c, id)
    local es = redis.call('GET', c.prefix .. 'e' .. eb)
    local r = es and find_record(es, id, 0, c.er)
    if not r then
      out[i - 3] = false
    elseif sub(es, r, r + #a[i] - 1) ~= a[i] then
      out[i - 3] = 0
    else
      local text = redis.call('LINDEX', c.prefix .. 'u' .. eb, (r - 1) / c.er)
      out[i - 3] = { text, sub(es, r + 12 + c.fpb, r + c.er - 1) }
    end
  end
  return out
end

function modes.query(meta, a)
  if redis.call('HGET', meta, 'cid') ~= a[2] then
    return norecord()
  end
  local c = parse(a[3])
  return scan(c, tonumber(a[4]), words_of(c, a[5]), a[6], {})
end

function modes.remove(meta, a)
  local c = parse(a[3])
  local fp, id, home, tables, token = a[4], a[5], a[6], a[7], a[8]
  local fields = home == '1' and { 'k' .. id } or {}
  local got = read_locks(meta, a[2], fields)
  if not got then
    return norecord()
  end
  release(meta, fields, got, token)
  unlink(c, fp, id, tables)
  return home == '1' and drop_entry(c, meta, id) and 1 or 0
end

function modes.expire(meta, a)
  local c = parse(a[3])
  local now, fp, id, home, tables = tonumber(a[4]), a[5], a[6], a[7], a[8]
  if redis.call('HGET', meta, 'cid') ~= a[2] then
    return norecord()
  end
  local words = words_of(c, fp)
  for i = 1, #tables do
    local gk = group_key(c, byte(tables, i), words)
    local s = redis.call('GET', gk)
    local p = s and find_record(s, fp .. id, 0, c.rec)
    if p and expired(c, now, s, p + c.fpb + 8) then
      put(gk, sub(s, 1, p - 1) .. sub(s, p + c.rec))
    end
  end
  if home == '1' then
    local es = redis.call('GET', c.prefix .. 'e' .. entry_bucket(c, id))
    local r = es and find_record(es, id, 0, c.er)
    if r and sub(es, r + 8, r + 7 + c.fpb) == fp and expired(c, now, es, r + 8 + c.fpb) then
      return drop_entry(c, meta, id) and 1 or 0
    end
  end
  return 0
end

function modes.purge(meta, a)
  if redis.call('HGET', meta, 'cid') ~= a[2] then
    return norecord()
  end
  local c = parse(a[3])
  local now, name = tonumber(a[4]), a[5]
  local s = redis.call('GET', name)
  if not s or c.ttl == 0 then
    return 0
  end
  local kind = sub(name, #c.prefix + 1, #c.prefix + 1)
  if kind == 'b' then
    local kept = {}
    for p = 1, #s, c.rec do
      if not expired(c, now, s, p + c.fpb + 8) then
        kept[#kept + 1] = sub(s, p, p + c.rec - 1)
      end
    end
    put(name, table.concat(kept))
    return 0
  end
  local dropped = 0
  for p = #s - c.er + 1, 1, -c.er do
    if expired(c, now, s, p + 8 + c.fpb) then
      dropped = dropped + (drop_entry(c, meta, sub(s, p, p + 7)) and 1 or 0)
    end
  end
  return dropped
end

redis.register_function('__LIBRARY__', function(keys, args)
  if not band then
    bind()
  end
  local mode = modes[args[1]]
  if not mode then
    return redis.error_reply('unknown sharded index operation ' .. tostring(args[1]))
  end
  return mode(keys[1], args)
end)
