-- Near-duplicate index operations, each run atomically inside Redis (one round trip).
--
-- Layout under PREFIX = "simhash:{namespace}:" (the hash tag keeps a namespace on one
-- cluster slot, which is what makes this script atomic on a cluster):
--   PREFIX.."m"                hash: "config" (JSON record), "n" (entry count)
--   PREFIX.."e"..bucket        hash: key id (8 bytes) -> fingerprint .. seen (u32) .. key
--   PREFIX.."b"..table..band   string: packed records fingerprint .. key id
-- The band of a table is the fingerprint ANDed with the table's mask, so this script and
-- the Python client name the same buckets.
--
-- KEYS[1] meta hash. Replies list matches as flat (key text, fingerprint, distance, id).
-- ARGV: 1 mode (observe|query|remove|expire), 2 prefix, 3 masks, 4 entry bucket bits,
--       5 max distance, 6 now, 7 ttl (0 = none), 8 fingerprint (zeros when unused),
--       9 key id, 10 key text

local mode = ARGV[1]
local prefix = ARGV[2]
local masks_s = ARGV[3]
local ebits = tonumber(ARGV[4])
local limit = tonumber(ARGV[5])
local now = tonumber(ARGV[6])
local ttl = tonumber(ARGV[7])
local fp = ARGV[8]
local me = ARGV[9]

local FPB = #fp
local W = FPB / 4
local REC = FPB + 8
local T = #masks_s / FPB
local WFMT = '>' .. string.rep('I4', W)

local masks = {}
for t = 1, T do
  masks[t] = { struct.unpack(WFMT, masks_s, (t - 1) * FPB + 1) }
end

-- Bucket name of table t: the fingerprint words ANDed with the table's mask. The hot
-- spot of every call, so the common widths avoid building a table per key.
local table_prefix = {}
for t = 1, T do
  table_prefix[t] = prefix .. 'b' .. string.char(t)
end
local band = bit.band
local pack = struct.pack

local function band_key(t, words)
  local m = masks[t]
  if W == 2 then
    return table_prefix[t] .. pack('>i4i4', band(words[1], m[1]), band(words[2], m[2]))
  end
  if W == 4 then
    return table_prefix[t] .. pack('>i4i4i4i4', band(words[1], m[1]), band(words[2], m[2]),
      band(words[3], m[3]), band(words[4], m[4]))
  end
  local parts = {}
  for i = 1, W do
    parts[i] = pack('>i4', band(words[i], m[i]))
  end
  return table_prefix[t] .. table.concat(parts)
end

local function entry_key(id)
  if ebits == 0 then
    return prefix .. 'e0'
  end
  local hi = struct.unpack('>I4', id)
  return prefix .. 'e' .. string.format('%d', math.floor(hi / 2 ^ (32 - ebits)))
end

local function expired(seen)
  return ttl > 0 and (now - seen) > ttl
end

-- Hamming distance between the probe words and the record at position p of s, giving up
-- as soon as it exceeds the limit.
local function distance_at(words, s, p)
  local c = 0
  for i = 1, W do
    local x = bit.bxor(words[i], (struct.unpack('>I4', s, p + (i - 1) * 4)))
    while x ~= 0 do
      c = c + 1
      if c > limit then
        return c
      end
      x = bit.band(x, x - 1)
    end
  end
  return c
end

-- Set when a bucket is rewritten after scan() read it, so observe re-reads instead of
-- reusing the scanned copy.
local dirty = false

local function unlink_bands(id, value)
  dirty = true
  local words = { struct.unpack(WFMT, value) }
  for t = 1, T do
    local bk = band_key(t, words)
    local s = redis.call('GET', bk)
    if s then
      for p = 1, #s, REC do
        if string.sub(s, p + FPB, p + REC - 1) == id then
          local rest = string.sub(s, 1, p - 1) .. string.sub(s, p + REC)
          if #rest == 0 then
            redis.call('DEL', bk)
          else
            redis.call('SET', bk, rest)
          end
          break
        end
      end
    end
  end
end

local function drop(id, value, ek)
  unlink_bands(id, value)
  redis.call('HDEL', ek, id)
  redis.call('HINCRBY', KEYS[1], 'n', -1)
end

-- Live entries within the limit of the probe, except `exclude`; expired ones met on the
-- way are deleted when `purge` is set. Also returns the probe's bucket names and contents,
-- which observe reuses to store the page without computing or reading them again.
local function scan(words, exclude, purge)
  local found, checked = {}, {}
  local names, contents = {}, {}
  for t = 1, T do
    local bk = band_key(t, words)
    local s = redis.call('GET', bk)
    names[t] = bk
    contents[t] = s or ''
    if s then
      for p = 1, #s, REC do
        local d = distance_at(words, s, p)
        if d <= limit then
          local id = string.sub(s, p + FPB, p + REC - 1)
          if id ~= exclude and not checked[id] then
            checked[id] = true
            local ek = entry_key(id)
            local value = redis.call('HGET', ek, id)
            if value then
              if expired(struct.unpack('>I4', value, FPB + 1)) then
                if purge then
                  drop(id, value, ek)
                end
              else
                found[#found + 1] = { string.sub(value, FPB + 5), string.sub(value, 1, FPB), d, id }
              end
            end
          end
        end
      end
    end
  end
  return found, names, contents
end

if mode == 'observe' then
  local words = { struct.unpack(WFMT, fp) }
  local found, names, contents = scan(words, me, true)
  if #found > 0 then
    -- Every match at the smallest distance; the client breaks ties by key text.
    local best = limit + 1
    for _, m in ipairs(found) do
      if m[3] < best then
        best = m[3]
      end
    end
    local out = { 1 }
    for _, m in ipairs(found) do
      if m[3] == best then
        out[#out + 1] = m[1]
        out[#out + 1] = m[2]
        out[#out + 1] = m[3]
        out[#out + 1] = m[4]
      end
    end
    return out
  end
  local ek = entry_key(me)
  local old = redis.call('HGET', ek, me)
  local previous = false
  local same = false
  if old then
    if not expired(struct.unpack('>I4', old, FPB + 1)) then
      previous = string.sub(old, 1, FPB)
    end
    same = string.sub(old, 1, FPB) == fp
    if not same then
      unlink_bands(me, old)
    end
  else
    redis.call('HINCRBY', KEYS[1], 'n', 1)
  end
  redis.call('HSET', ek, me, fp .. struct.pack('>I4', math.floor(now)) .. ARGV[10])
  if not same then
    local record = fp .. me
    for t = 1, T do
      -- SET of the whole bucket rather than APPEND: APPEND over-allocates (up to 2x) for
      -- future growth, which would double the memory of small buckets.
      local bk = names[t]
      local s = contents[t]
      if dirty then
        s = redis.call('GET', bk) or ''
      end
      redis.call('SET', bk, s .. record)
    end
  end
  return { 0, previous }
elseif mode == 'query' then
  local words = { struct.unpack(WFMT, fp) }
  local out = {}
  for _, m in ipairs((scan(words, nil, false))) do
    out[#out + 1] = m[1]
    out[#out + 1] = m[2]
    out[#out + 1] = m[3]
    out[#out + 1] = m[4]
  end
  return out
elseif mode == 'remove' or mode == 'expire' then
  local ek = entry_key(me)
  local value = redis.call('HGET', ek, me)
  if not value then
    return 0
  end
  if mode == 'expire' and not expired(struct.unpack('>I4', value, FPB + 1)) then
    return 0
  end
  drop(me, value, ek)
  return 1
end
return redis.error_reply('unknown index operation ' .. tostring(mode))
