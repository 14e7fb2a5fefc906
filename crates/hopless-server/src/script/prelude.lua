-- The Lua side of the scripting sandbox, run once on a fresh state (`sandbox.rs`). It receives the
-- real globals table, the debug library (kept private: scripts do not see it), and the Rust
-- functions that the redis table's raising wrappers call. It returns the error handler that every
-- script runs under and the proxy that becomes the scripts' globals.
--
-- Redis 7.0 makes its globals and library tables read-only inside its patched Lua; a stock Lua 5.1
-- has no read-only tables, so each protected table is reached through an empty proxy whose
-- metatable reads through to it and refuses writes with Redis's message. `rawset`, `setmetatable`
-- and `getmetatable` are wrapped so that they cannot reach behind a proxy either.
local G, dbg, raising, set_resp, sha1hex, log, set_repl, killed = ...

local type, error, tostring, tonumber, select = type, error, tostring, tonumber, select
local raw_pcall, raw_xpcall, raw_rawset, raw_setmetatable, raw_getmetatable, rawget =
  pcall, xpcall, rawset, setmetatable, getmetatable, rawget
local PRELUDE = dbg.getinfo(1, 'S').source

local READONLY = 'Attempt to modify a readonly table'

-- Every script error becomes a table {err=..., source=..., line=...}: a string raised by Lua code gets
-- the generic ERR code; the position is the first frame outside C and outside this file.
local function handler(err)
  local level, info = 2, nil
  repeat
    info = dbg.getinfo(level, 'nSl')
    level = level + 1
  until not info or (info.what ~= 'C' and info.source ~= PRELUDE)
  if type(err) == 'userdata' then
    -- Raised by a Rust function: its text without the kind of error and the traceback Rust's side
    -- adds, and with where the script called it first, as `luaL_error` words it (but for SCRIPT
    -- KILL's error and FUNCTION LOAD's timeout, which Redis raises without a position).
    local msg = tostring(err):gsub('\nstack traceback:.*$', '')
    local runtime = msg:find('^runtime error: ') ~= nil
    msg = msg:gsub('^runtime error: ', ''):gsub('^memory error: ', '')
    if runtime and info and not msg:find('^Script killed by user') and msg ~= 'FUNCTION LOAD timeout' then
      msg = info.short_src .. ':' .. tostring(info.currentline) .. ': ' .. msg
    end
    err = msg
  end
  if type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if info then
    err['source'] = info.source
    err['line'] = info.currentline
  end
  return err
end

local redis = G.redis



-- The functions that raise Redis's errors are C functions over these (`sandbox.rs`, `raising`), so
-- that a script's `return redis.sha1hex()` keeps the script's frame for the error's line: each answers
-- its value and false, or the error table and true.
local registry = dbg.getregistry()
-- The scripts' own runner needs the real one.
registry['hopless.xpcall'] = raw_xpcall

registry['hopless.setresp'] = function(...)
  if select('#', ...) ~= 1 then return {err = 'ERR redis.setresp() requires one argument.'}, true end
  local resp = tonumber((...))
  if resp ~= 2 and resp ~= 3 then return {err = 'ERR RESP version must be 2 or 3.'}, true end
  set_resp(resp)
  return nil, false
end

registry['hopless.sha1hex'] = function(...)
  if select('#', ...) ~= 1 then return {err = 'ERR wrong number of arguments'}, true end
  local s = ...
  if type(s) == 'number' then s = tostring(s) end
  if type(s) ~= 'string' then s = '' end
  return sha1hex(s), false
end

registry['hopless.log'] = function(...)
  local n = select('#', ...)
  if n < 2 then return {err = 'ERR redis.log() requires two arguments or more.'}, true end
  local level = ...
  if type(level) ~= 'number' and not tonumber(level) then
    return {err = 'ERR First argument must be a number (log level).'}, true
  end
  level = tonumber(level)
  if level < 0 or level > 3 then return {err = 'ERR Invalid debug level.'}, true end
  local parts = {}
  for i = 2, n do
    local s = select(i, ...)
    if type(s) == 'string' or type(s) == 'number' then parts[#parts + 1] = tostring(s) end
  end
  log(level, table.concat(parts, ' '))
  return nil, false
end

registry['hopless.set_repl'] = function(...)
  if select('#', ...) ~= 1 then return {err = 'ERR redis.set_repl() requires two arguments.'}, true end
  local flags = tonumber((...)) or 0
  if flags ~= 0 and flags ~= 1 and flags ~= 2 and flags ~= 3 then
    return {err = 'ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.'}, true
  end
  set_repl(flags)
  return nil, false
end

for name, f in pairs(raising) do
  if name ~= 'register_function' then redis[name] = f end
end

redis.replicate_commands = function() return true end

-- Lua's pcall, with a Redis error table turned into its message (as Redis's own pcall does, for
-- scripts written when errors were strings). Neither pcall nor xpcall can catch SCRIPT KILL's error:
-- a killed script's error is raised again past them.
local KILLED = 'ERR Script killed by user with SCRIPT KILL...'

local function unwrap(ok, ...)
  if not ok then
    if killed() then error({err = KILLED}) end
    local e = ...
    if type(e) == 'table' and type(rawget(e, 'err')) == 'string' then return false, e.err end
    return false, e
  end
  return ok, ...
end
G.pcall = function(...) return unwrap(raw_pcall(...)) end

local function recheck(ok, ...)
  if not ok and killed() then error({err = KILLED}) end
  return ok, ...
end
G.xpcall = function(...) return recheck(raw_xpcall(...)) end

-- Read-only proxies.
local proxy_of = {}     -- protected table -> its proxy
local protected = {}    -- proxy -> protected table

local function refuse() error(READONLY, 2) end

-- A proxy's metatable answers `getmetatable` with a read-only view of itself (`__metatable`): a script
-- that reached the metatable itself could point `__index` elsewhere for every later script.
local function guard(mt)
  local view = {}
  local view_mt = {__index = mt, __newindex = refuse}
  view_mt.__metatable = view
  raw_setmetatable(view, view_mt)
  protected[view] = mt
  mt.__metatable = view
  return mt
end

local function readonly(t)
  local p = proxy_of[t]
  if p then return p end
  p = {}
  raw_setmetatable(p, guard({__index = t, __newindex = refuse}))
  proxy_of[t] = p
  protected[p] = t
  return p
end

G.rawset = function(t, k, v)
  if protected[t] then error(READONLY, 0) end
  return raw_rawset(t, k, v)
end

G.setmetatable = function(t, mt)
  if protected[t] then error(READONLY, 0) end
  return raw_setmetatable(t, mt)
end

G.getmetatable = function(v)
  local mt = raw_getmetatable(v)
  if type(mt) == 'table' and proxy_of[mt] then return proxy_of[mt] end
  return mt
end

-- Binary chunks are refused, as Redis refuses them (bytecode can break out of any sandbox).
local raw_loadstring = loadstring
G.loadstring = function(s, ...)
  if type(s) == 'string' and s:byte(1) == 27 then return nil, 'binary chunks are not allowed' end
  return raw_loadstring(s, ...)
end

for _, name in ipairs({'string', 'table', 'math', 'coroutine', 'bit', 'cjson', 'cmsgpack', 'struct', 'redis'}) do
  if type(rawget(G, name)) == 'table' then G[name] = readonly(G[name]) end
end

-- Strings' methods come through their metatable: its __index is the string library's proxy, and the
-- metatable itself is handed out as a proxy.
local string_mt = raw_getmetatable('')
string_mt.__index = G.string
readonly(string_mt)

-- What the scripts' globals read: the whole API, or while FUNCTION LOAD runs a library's code, only
-- `redis.register_function`, `redis.log` and the constants (`set_api`).
local api = G

local function missing(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end

local globals = {}
raw_setmetatable(globals, guard({
  __index = function(_, k)
    local v = rawget(api, k)
    if v == nil then
      error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end
    return v
  end,
  __newindex = refuse,
}))
proxy_of[G] = globals
protected[globals] = G
G._G = globals

local load_redis = {register_function = raising.register_function, log = redis.log}
for _, k in ipairs({'LOG_DEBUG', 'LOG_VERBOSE', 'LOG_NOTICE', 'LOG_WARNING', 'REDIS_VERSION', 'REDIS_VERSION_NUM'}) do
  load_redis[k] = redis[k]
end
raw_setmetatable(load_redis, guard({__index = missing, __newindex = refuse}))
local load_api = {redis = load_redis}

local function set_api(loading)
  if loading then api = load_api else api = G end
end

-- Runs a function of a library with its KEYS and ARGV tables, under the handler.
local function run_with(f, keys, args)
  return raw_xpcall(function() return f(keys, args) end, handler)
end

return handler, globals, set_api, run_with
