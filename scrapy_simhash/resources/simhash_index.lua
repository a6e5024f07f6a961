-- Near-duplicate index operations, each run atomically inside Redis (one round trip).
--
-- Layout under PREFIX = "simhash:{namespace}:" (the hash tag keeps a namespace on one
-- cluster slot, which is what makes this script atomic on a cluster):
--   PREFIX.."m"                  hash: "config" (JSON record), "n" (entry count)
--   PREFIX.."b"..table..group    string: band records (fingerprint; in table 1 followed
--                                by its entry bucket, u16), sorted by the table's band
--                                (fingerprint AND mask)
--   PREFIX.."e"..bucket          string: entry records (key id 8 bytes .. fingerprint ..
--                                last seen u32 .. signature 24 bytes: the sketch of the
--                                page's other lines, then the second test's), fixed size
--   PREFIX.."u"..bucket          list: the key texts of that bucket's entries, in the same
--                                order (a list appends in place and finds an item by
--                                index in C, where a string would be copied through Lua)
-- Memory is what shapes this: a Redis key costs ~80 bytes of overhead, so a band group
-- gathers every band value sharing the top bits of the band (sized at creation to hold
-- ~64 records) instead of one key per band value, and records are sorted so a probe
-- binary-searches its own band. Two stored entries never share a fingerprint (two within
-- k may both be stored, when the second test tells them apart): a page whose very
-- fingerprint another live entry holds is its copy, or a twin that is not stored, and an
-- expired holder met on the way is deleted first. So band records name their entry by
-- fingerprint and entry bucket (once, in table 1), not by an 8-byte key id, and an entry
-- is found in its bucket by fingerprint. Strings and lists have no size limit that
-- switches them to a costly encoding, unlike hashes (hash-max-listpack-value), whatever
-- the key length. Strings are rewritten whole (SET), never grown by APPEND or SETRANGE,
-- which over-allocate up to 2x.
--
-- KEYS[1] meta hash. Replies list matches as flat (key text, fingerprint, distance,
-- signature). observe and claim decide with the second test (index/base.py's judge and
-- confirm.py's confirms): a candidate within k is a match only when its signature
-- confirms the page's. Their replies: {0, rejected, previous fingerprint, its signature}
-- (stored; false when the key held no live entry), {1, rejected, matches...} (every
-- confirmed candidate at the smallest distance; the client breaks ties by key text),
-- {2, rejected, stored fingerprint, its signature} (a claim's conflict: nothing stored),
-- {3, rejected, previous fingerprint} (a rejected candidate holds the page's very
-- fingerprint: a twin, not stored). `rejected` counts the candidates the test turned away.
-- "claim" is observe for a page naming `key` as its canonical URL: the entry already under
-- `key` counts as a candidate too, and any other live entry there is a conflict.
-- ARGV: 1 mode (observe|claim|rename|query|remove|expire), 2 prefix, 3 band masks, 4 group masks,
--       5 entry bucket bits, 6 max distance, 7 confirm distance, 8 short pages' confirm
--       distance, 9 now, 10 ttl (0 = none), 11 fingerprint (zeros when unused), 12 signature
--       (24 bytes), 13 key id, 14 key text; rename adds 15 new key id, 16 its text; last:
--       digest of the configuration record

-- A server restarted without persistence loses the configuration record while clients
-- keep writing, and another process may then create the namespace with other settings.
-- Every call names the record it was opened with (its last argument, a digest stored as
-- "cid"): on any difference it refuses, and the client writes its record back or learns
-- that another one is in place, before any entry is stored.
if redis.call('HGET', KEYS[1], 'cid') ~= ARGV[#ARGV] then
  return redis.error_reply('NORECORD the index configuration record is missing or changed')
end

local mode = ARGV[1]
local prefix = ARGV[2]
local masks_s = ARGV[3]
local groups_s = ARGV[4]
local ebits = tonumber(ARGV[5])
local limit = tonumber(ARGV[6])
local climit = tonumber(ARGV[7])
local slimit = tonumber(ARGV[8])
local now = tonumber(ARGV[9])
local ttl = tonumber(ARGV[10])
local fp = ARGV[11]
local sig = ARGV[12]
local me = ARGV[13]

local FPB = #fp
local W = FPB / 4
-- Band records: table 1's also name the entry bucket (u16); the others find it there.
local REC1 = FPB + 2
local ER = FPB + 36 -- entry record
local SEEN = 8 + FPB -- offsets in an entry record
local SIG = 12 + FPB
local T = #masks_s / FPB
local WFMT = '>' .. string.rep('i4', W)

local band = bit.band
local pack = struct.pack
local unpack = struct.unpack
local sub = string.sub

-- Per table: the group mask words, and the (byte offset, mask) of each word the band
-- covers, so comparing a record's band unpacks only those words.
local groups, keyed, table_prefix, rec = {}, {}, {}, {}
for t = 1, T do
  rec[t] = t == 1 and REC1 or FPB
  local m = { unpack(WFMT, masks_s, (t - 1) * FPB + 1) }
  groups[t] = { unpack(WFMT, groups_s, (t - 1) * FPB + 1) }
  keyed[t] = {}
  for i = 1, W do
    if m[i] ~= 0 then
      keyed[t][#keyed[t] + 1] = { (i - 1) * 4, m[i], i }
    end
  end
  table_prefix[t] = prefix .. 'b' .. string.char(t)
end

local function words_of(s, p)
  return { unpack(WFMT, s, p or 1) }
end

-- Group (key name) of table t for fingerprint words: the words ANDed with the group mask.
local function group_key(t, words)
  local m = groups[t]
  if W == 2 then
    return table_prefix[t] .. pack('>i4i4', band(words[1], m[1]), band(words[2], m[2]))
  end
  local parts = {}
  for i = 1, W do
    parts[i] = pack('>i4', band(words[i], m[i]))
  end
  return table_prefix[t] .. table.concat(parts)
end

-- The probe's band of table t: its keyed words, masked, to compare records against.
local function band_of(t, words)
  local out = {}
  local k = keyed[t]
  for j = 1, #k do
    out[j] = band(words[k[j][3]], k[j][2])
  end
  return out
end

-- Order of the record at p against band b: -1, 0 or 1 (signed word order: any total
-- order works as long as inserts and searches agree).
local function compare_at(t, s, p, b)
  local k = keyed[t]
  for j = 1, #k do
    local x = band((unpack('>i4', s, p + k[j][1])), k[j][2])
    if x ~= b[j] then
      return x < b[j] and -1 or 1
    end
  end
  return 0
end

-- Position (1-based) of the first record of s whose band is >= b.
local function lower_bound(t, s, b)
  local size = rec[t]
  local lo, hi = 0, #s / size
  while lo < hi do
    local mid = bit.rshift(lo + hi, 1)
    if compare_at(t, s, mid * size + 1, b) < 0 then
      lo = mid + 1
    else
      hi = mid
    end
  end
  return lo * size + 1
end

-- Start of the record of size `size` holding `needle` at `offset`, or nil. string.find
-- runs in C; a hit straddling two records is skipped.
local function find_record(s, needle, offset, size)
  local init = 1
  while true do
    local p = string.find(s, needle, init, true)
    if not p then
      return nil
    end
    if (p - 1 - offset) % size == 0 then
      return p - offset
    end
    init = p + 1
  end
end

-- Hamming distance between the probe words and the fingerprint at p of s, giving up as
-- soon as it exceeds the limit.
local function distance_at(words, s, p)
  local c = 0
  for i = 1, W do
    local x = bit.bxor(words[i], (unpack('>i4', s, p + (i - 1) * 4)))
    while x ~= 0 do
      c = c + 1
      if c > limit then
        return c
      end
      x = band(x, x - 1)
    end
  end
  return c
end

-- Whether a stored signature, its fingerprint d bits away, confirms the page's
-- (confirm.py's confirms): without a signature (all ones) only another without one; a
-- short page's (lowest bit set) only another short page's at the same fingerprint, within
-- slimit differing bits; a near signature another within climit bits.
-- The signature proper is the last 16 of a stored signature's 24 bytes (the sketch before
-- it is not compared).
local NONE = string.rep('\255', 16)
local test = sub(sig, 9)
local function confirms(stored, d)
  local other = sub(stored, 9)
  if test == NONE or other == NONE then
    return other == test
  end
  local most = climit
  local short = band(string.byte(test, 16), 1) + band(string.byte(other, 16), 1)
  if short > 0 then
    if short == 1 or d ~= 0 then
      return false
    end
    most = slimit
  end
  local c = 0
  for i = 1, 13, 4 do
    local x = bit.bxor((unpack('>i4', test, i)), (unpack('>i4', other, i)))
    while x ~= 0 do
      c = c + 1
      if c > most then
        return false
      end
      x = band(x, x - 1)
    end
  end
  return true
end

local function entry_bucket(id)
  if ebits == 0 then
    return pack('>I2', 0)
  end
  local hi = unpack('>I4', id)
  return pack('>I2', math.floor(hi / 2 ^ (32 - ebits)))
end

local function expired(seen)
  return ttl > 0 and (now - seen) > ttl
end

local function put(key, value)
  if #value == 0 then
    redis.call('DEL', key)
  else
    redis.call('SET', key, value)
  end
end

-- Set when a band group is rewritten after scan() read it, so observe re-reads instead
-- of reusing the scanned copy.
local dirty = false

local function unlink_bands(f)
  dirty = true
  local words = words_of(f)
  for t = 1, T do
    local gk = group_key(t, words)
    local s = redis.call('GET', gk)
    if s then
      local p = find_record(s, f, 0, rec[t])
      if p then
        put(gk, sub(s, 1, p - 1) .. sub(s, p + rec[t]))
      end
    end
  end
end

-- Entry bucket of stored fingerprint f, from its record in table 1.
local function entry_bucket_of(f)
  local s = redis.call('GET', group_key(1, words_of(f)))
  local p = s and find_record(s, f, 0, REC1)
  return p and sub(s, p + FPB, p + REC1 - 1)
end

-- Forget the entry of key id `id` in bucket `eb`; tell whether it existed.
local function drop(eb, id)
  local ek = prefix .. 'e' .. eb
  local es = redis.call('GET', ek)
  local r = es and find_record(es, id, 0, ER)
  if not r then
    return false
  end
  unlink_bands(sub(es, r + 8, r + SEEN - 1))
  put(ek, sub(es, 1, r - 1) .. sub(es, r + ER))
  -- Keys are never empty, so an empty item marks the one to delete.
  local uk = prefix .. 'u' .. eb
  redis.call('LSET', uk, (r - 1) / ER, '')
  redis.call('LREM', uk, 1, '')
  redis.call('HINCRBY', KEYS[1], 'n', -1)
  return true
end

-- Live entries within the limit of the probe, except key id `exclude`; expired ones met
-- on the way are deleted when `purge` is set. Also returns the probe's group names,
-- contents and band positions, which observe reuses to store the page.
local function scan(words, exclude, purge)
  local found, checked = {}, {}
  local names, contents, starts = {}, {}, {}
  for t = 1, T do
    local gk = group_key(t, words)
    local s = redis.call('GET', gk) or ''
    local b = band_of(t, words)
    local p = lower_bound(t, s, b)
    names[t], contents[t], starts[t] = gk, s, p
    while p <= #s and compare_at(t, s, p, b) == 0 do
      local d = distance_at(words, s, p)
      if d <= limit then
        local f = sub(s, p, p + FPB - 1)
        if not checked[f] then
          checked[f] = true
          local eb = t == 1 and sub(s, p + FPB, p + REC1 - 1) or entry_bucket_of(f)
          local es = eb and redis.call('GET', prefix .. 'e' .. eb) or ''
          local r = find_record(es, f, 8, ER)
          local id = r and sub(es, r, r + 7)
          if id and id ~= exclude then
            if expired(unpack('>I4', es, r + SEEN)) then
              if purge then
                drop(eb, id)
              end
            else
              local text = redis.call('LINDEX', prefix .. 'u' .. eb, (r - 1) / ER)
              found[#found + 1] = { text, f, d, sub(es, r + SIG, r + ER - 1) }
            end
          end
        end
      end
      p = p + rec[t]
    end
  end
  return found, names, contents, starts
end

local function flatten(matches, out)
  for _, m in ipairs(matches) do
    out[#out + 1] = m[1]
    out[#out + 1] = m[2]
    out[#out + 1] = m[3]
    out[#out + 1] = m[4]
  end
  return out
end

if mode == 'observe' or mode == 'claim' then
  local claim = mode == 'claim'
  local words = words_of(fp)
  local found, names, contents, starts = scan(words, (not claim) and me or nil, true)
  -- The second test: the closest candidates whose signature confirms the page's.
  local best, confirmed, rejected, twin = limit + 1, {}, 0, false
  for _, m in ipairs(found) do
    if confirms(m[4], m[3]) then
      confirmed[#confirmed + 1] = m
      if m[3] < best then
        best = m[3]
      end
    else
      rejected = rejected + 1
      twin = twin or m[3] == 0
    end
  end
  if #confirmed > 0 then
    local closest = {}
    for _, m in ipairs(confirmed) do
      if m[3] == best then
        closest[#closest + 1] = m
      end
    end
    return flatten(closest, { 1, rejected })
  end
  local eb = entry_bucket(me)
  local ek = prefix .. 'e' .. eb
  local es = redis.call('GET', ek) or ''
  local r = find_record(es, me, 0, ER)
  local previous, previous_sig, same = false, false, false
  if r and not expired(unpack('>I4', es, r + SEEN)) then
    previous, previous_sig = sub(es, r + 8, r + SEEN - 1), sub(es, r + SIG, r + ER - 1)
  end
  if claim and previous then
    return { 2, rejected, previous, previous_sig }
  end
  if twin then
    -- Storing it would give two entries one fingerprint, and it copies nothing stored.
    return { 3, rejected, previous }
  end
  local stamp = pack('>I4', math.floor(now))
  if r then
    local old = sub(es, r + 8, r + SEEN - 1)
    same = old == fp
    if not same then
      unlink_bands(old)
    end
    redis.call('SETRANGE', ek, r + 7, fp .. stamp .. sig)
  else
    redis.call('HINCRBY', KEYS[1], 'n', 1)
    redis.call('SET', ek, es .. me .. fp .. stamp .. sig)
    redis.call('RPUSH', prefix .. 'u' .. eb, ARGV[14])
  end
  if not same then
    for t = 1, T do
      local gk, s, p = names[t], contents[t], starts[t]
      if dirty then
        s = redis.call('GET', gk) or ''
        p = lower_bound(t, s, band_of(t, words))
      end
      redis.call('SET', gk, sub(s, 1, p - 1) .. fp .. (t == 1 and eb or '') .. sub(s, p))
    end
  end
  return { 0, rejected, previous, previous_sig }
elseif mode == 'rename' then
  -- Move the entry of key id `me` to key id ARGV[15] (text ARGV[16]), fingerprint, last
  -- seen and signature unchanged; an entry already under the new key is dropped first.
  -- Only the entry record, the key text and table 1's entry bucket move: the band records
  -- name the fingerprint, which stays.
  local new, text = ARGV[15], ARGV[16]
  local neb = entry_bucket(new)
  local eb = entry_bucket(me)
  local ek = prefix .. 'e' .. eb
  local es = redis.call('GET', ek)
  if not (es and find_record(es, me, 0, ER)) then
    return 0
  end
  if new ~= me and drop(neb, new) then
    es = redis.call('GET', ek) -- the same bucket may have lost a record
  end
  local r = find_record(es, me, 0, ER)
  local record = sub(es, r + 8, r + ER - 1) -- fingerprint .. last seen .. signature
  local f = sub(record, 1, FPB)
  put(ek, sub(es, 1, r - 1) .. sub(es, r + ER))
  local uk = prefix .. 'u' .. eb
  redis.call('LSET', uk, (r - 1) / ER, '')
  redis.call('LREM', uk, 1, '')
  local nek = prefix .. 'e' .. neb
  redis.call('SET', nek, (redis.call('GET', nek) or '') .. new .. record)
  redis.call('RPUSH', prefix .. 'u' .. neb, text)
  local gk = group_key(1, words_of(f))
  local s = redis.call('GET', gk)
  local p = find_record(s, f, 0, REC1)
  redis.call('SET', gk, sub(s, 1, p + FPB - 1) .. neb .. sub(s, p + REC1))
  return 1
elseif mode == 'query' then
  return flatten((scan(words_of(fp), nil, false)), {})
elseif mode == 'remove' or mode == 'expire' then
  local eb = entry_bucket(me)
  if mode == 'expire' then
    local es = redis.call('GET', prefix .. 'e' .. eb)
    local r = es and find_record(es, me, 0, ER)
    if not r or not expired(unpack('>I4', es, r + SEEN)) then
      return 0
    end
  end
  return drop(eb, me) and 1 or 0
end
return redis.error_reply('unknown index operation ' .. tostring(mode))
