//! Differential test of Lua scripting (EVAL, EVALSHA, EVAL_RO, SCRIPT): the same scripts against real
//! Redis (`redis-server`, when installed) and against hopless, replies compared byte for byte, errors
//! and their `script: <sha>, on @user_script:<line>.` included. Then what only one server can show:
//! a script runs alone across event loops, wakes blocked clients, cannot exhaust memory, and redis-py's
//! `Lock` and `register_script` work. Skipped without `redis-server` (failed under `CI=true`).

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::differ::{Differ, Order};
use common::Raw;
use hopless_server::codec::Frame;

/// Scripts whose replies must match Redis 7's exactly, run in order on one connection of each.
const SCRIPT: &[&str] = &[
    // Values both ways.
    "EVAL \"return 1\" 0",
    "EVAL \"return 3.99\" 0",
    "EVAL \"return -3.7\" 0",
    "EVAL \"return 1e20\" 0",
    "EVAL \"return 'hello'\" 0",
    "EVAL \"return true\" 0",
    "EVAL \"return false\" 0",
    "EVAL \"return nil\" 0",
    "EVAL \"return {1,2,3,'a',nil,4}\" 0",
    "EVAL \"return {1,{2,{3,{}}},'x'}\" 0",
    "EVAL \"return {ok='fine'}\" 0",
    "EVAL \"return {ok='a\\r\\nb'}\" 0",
    "EVAL \"return {err='My Error'}\" 0",
    "EVAL \"return {err='-DASHED message'}\" 0",
    "EVAL \"return redis.error_reply('My Error')\" 0",
    "EVAL \"return redis.error_reply('-CODE with code')\" 0",
    "EVAL \"return redis.error_reply(5)\" 0",
    "EVAL \"return redis.status_reply('PONG')\" 0",
    "EVAL \"return {double=3.5}\" 0",
    "EVAL \"return {map={a=1}}\" 0",
    "EVAL \"return {set={a=true}}\" 0",
    "EVAL \"return {big_number='123456789012345678901234567890'}\" 0",
    "EVAL \"return {verbatim_string={format='mkd', string='hi'}}\" 0",
    "EVAL \"return KEYS[1]..ARGV[1]..#KEYS..#ARGV\" 2 k1 k2 a1",
    "EVAL \"return ARGV\" 0 a b c",
    // Arguments.
    "EVAL \"return 1\" -1",
    "EVAL \"return 1\" abc",
    "EVAL \"return 1\" 2 a",
    "EVAL \"return 1\" 0 extra",
    // Commands from scripts.
    "EVAL \"return redis.call('set', KEYS[1], ARGV[1])\" 1 s abc",
    "EVAL \"return redis.call('get', KEYS[1])\" 1 s",
    "EVAL \"return redis.call('get', 'nokey')\" 0",
    "EVAL \"return redis.call('incr', 's')\" 0",
    "EVAL \"return redis.pcall('incr', 's')\" 0",
    "EVAL \"local ok, e = pcall(redis.call, 'incr', 's'); return {tostring(ok), e}\" 0",
    "EVAL \"return redis.call('nosuch')\" 0",
    "EVAL \"return redis.call('get')\" 0",
    "EVAL \"return redis.call()\" 0",
    "EVAL \"return redis.call({})\" 0",
    "EVAL \"return redis.call('set', 'f', 1.5)\" 0",
    "GET f",
    "EVAL \"return redis.call('set', 'f', 0.1)\" 0",
    "GET f",
    "EVAL \"return redis.call('set', 'f', 1e20)\" 0",
    "GET f",
    "EVAL \"return redis.call('set', 'f', 123456789012)\" 0",
    "GET f",
    "EVAL \"return redis.call('incrbyfloat', 'fl', 0.1)\" 0",
    "EVAL \"return redis.call('eval', 'return 1', 0)\" 0",
    "EVAL \"return redis.call('multi')\" 0",
    "EVAL \"return redis.call('blpop', 'l', 1)\" 0",
    "EVAL \"return redis.call('subscribe', 'ch')\" 0",
    "EVAL \"redis.call('rpush', 'l', 'a', 'b'); return redis.call('lrange', 'l', 0, -1)\" 0",
    "EVAL \"return redis.call('hgetall', 'nohash')\" 0",
    "EVAL \"redis.call('hset', 'h', 'f', 'v'); return redis.call('hgetall', 'h')\" 0",
    "EVAL \"redis.setresp(3); return redis.call('hgetall', 'h')\" 0",
    "EVAL \"redis.setresp(3); return redis.call('get', 'nokey') == nil\" 0",
    "EVAL \"return redis.call('get', 'nokey') == false\" 0",
    "EVAL \"redis.setresp(4)\" 0",
    "EVAL \"redis.setresp()\" 0",
    "EVAL \"return redis.call('ping')\" 0",
    "EVAL \"return redis.call('type', 'l')\" 0",
    "EVAL_RO \"return redis.call('get', 's')\" 0",
    "EVAL_RO \"return redis.call('set', 's', 1)\" 0",
    "EVAL \"#!lua flags=no-writes\nreturn redis.call('set', 's', 1)\" 0",
    "EVAL \"#!lua flags=no-writes\nreturn redis.call('get', 's')\" 0",
    "EVAL \"#!lua flags=bogus\nreturn 1\" 0",
    "EVAL \"#!py flags=x\nreturn 1\" 0",
    "EVAL \"#!luax\nreturn 1\" 0",
    "EVAL \"#!lua   flags=no-writes,no-writes\nreturn 1\" 0",
    "EVAL \"#!lua name=x\nreturn 1\" 0",
    "EVAL \"#!lua flags=\nreturn 1\" 0",
    "EVAL \"#!lua\" 0",
    "EVAL \"#!lua\nerror('x')\" 0",
    "SCRIPT LOAD \"#!lua flags=no-writes\nreturn redis.call('set', 'x', '1')\"",
    "EVALSHA 6496c2741353a8e9e5fd8f1f4205c2149edef733 0",
    "CONFIG SET maxmemory 1",
    "EVAL \"#!lua\nreturn 1\" 0",
    "EVAL \"#!lua flags=no-writes\nreturn 1\" 0",
    "EVAL \"#!lua flags=allow-oom\nreturn 1\" 0",
    "EVAL \"return redis.call('set', 'a', 'b')\" 0",
    "EVAL \"return redis.call('get', 'a')\" 0",
    // An `allow-oom` script writes over the limit; the next script without it is refused again.
    "EVAL \"#!lua flags=allow-oom\nredis.call('set', 'oom1', 'x') return redis.call('append', 'oom1', 'yz')\" 0",
    "EVAL \"return redis.call('set', 'oom2', 'x')\" 0",
    "SET oom3 x",
    "FUNCTION LOAD \"#!lua name=oomlib\nredis.register_function('oomf', function() return 1 end)\"",
    "FUNCTION RESTORE x",
    "FUNCTION FLUSH",
    "GET oom1",
    "CONFIG SET maxmemory 0",
    // Errors and the sandbox.
    "EVAL \"syntax error here\" 0",
    "EVAL \"error('boom')\" 0",
    "EVAL \"\nlocal x = 1\nerror('on line three')\" 0",
    "EVAL \"error({err='custom'})\" 0",
    "EVAL \"return nil + 1\" 0",
    "EVAL \"x = 5\" 0",
    "EVAL \"return y\" 0",
    "EVAL \"print(1)\" 0",
    "EVAL \"return type(debug)\" 0",
    "EVAL \"os.exit()\" 0",
    "EVAL \"string.upper = nil\" 0",
    "EVAL \"redis.call = nil\" 0",
    "EVAL \"setmetatable(_G, nil)\" 0",
    "EVAL \"local f = loadstring('x = 1'); f()\" 0",
    "EVAL \"return _VERSION\" 0",
    "EVAL \"return type(loadstring)\" 0",
    "EVAL \"return ('abc'):upper()\" 0",
    "EVAL \"return getmetatable('').__index == string\" 0",
    "EVAL \"local t = {} for i = 1, 3 do t[#t + 1] = i * 2 end return t\" 0",
    // The libraries.
    "EVAL \"return redis.sha1hex('')\" 0",
    "EVAL \"return redis.sha1hex('abc')\" 0",
    "EVAL \"return redis.sha1hex()\" 0",
    "EVAL \"return redis.setresp()\" 0",
    "EVAL \"local x = 1\nreturn redis.log()\" 0",
    "EVAL \"return bit.tohex(255)\" 0",
    "EVAL \"return bit.tohex(-1, -4)\" 0",
    "EVAL \"return {bit.band(12, 10), bit.bor(12, 10), bit.bxor(12, 10), bit.bnot(0)}\" 0",
    "EVAL \"return {bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(1, 33)}\" 0",
    "EVAL \"return bit.tobit(4294967297)\" 0",
    "EVAL \"return string.format('%d-%s-%5.2f', 7, 'x', 3.14159)\" 0",
    "EVAL \"return table.concat({'a', 'b'}, ',')\" 0",
    "EVAL \"return math.floor(7.9)\" 0",
    "EVAL \"return tostring(redis.REPL_ALL)\" 0",
    "EVAL \"return redis.replicate_commands()\" 0",
    "EVAL \"redis.set_repl(redis.REPL_ALL); return 1\" 0",
    "EVAL \"redis.set_repl(9)\" 0",
    "EVAL \"return redis.log(redis.LOG_WARNING, 'from a script')\" 0",
    "EVAL \"redis.log('x')\" 0",
    // cjson and cmsgpack.
    "EVAL \"return cjson.encode({})\" 0",
    "EVAL \"return cjson.encode({1,nil,3})\" 0",
    "EVAL \"return cjson.encode({[1]=1,[5]=5})\" 0",
    "EVAL \"return cjson.encode({[1]=1,[20]=5})\" 0",
    "EVAL \"return cjson.encode('a/b\\\"c\\\\\\\\d\\n\\1\\127\\200')\" 0",
    "EVAL \"return cjson.encode(0.1)\" 0",
    "EVAL \"return cjson.encode(1/0)\" 0",
    "EVAL \"return cjson.encode(123456789012345)\" 0",
    "EVAL \"return cjson.encode({a={b={}}, c=1, d='x', e={1,2}})\" 0",
    "EVAL \"return cjson.encode(cjson.null)\" 0",
    "EVAL \"return cjson.encode({[true]=1})\" 0",
    "EVAL \"return cjson.encode({[1.5]=1, [0]=2})\" 0",
    "EVAL \"return cjson.encode(function() end)\" 0",
    "EVAL \"return cjson.decode('[1,2,{\\\"a\\\":null}]')[3].a == cjson.null\" 0",
    "EVAL \"return cjson.decode('{\\\"k\\\":[true,false,\\\"s\\\",1.25,-2e3],\\\"z\\\":{\\\"q\\\":[]}}').k\" 0",
    "EVAL \"return cjson.encode(cjson.decode('{\\\"k\\\":[true,false,\\\"s\\\",1.25],\\\"z\\\":{\\\"q\\\":[]}}'))\" 0",
    "EVAL \"return cjson.decode('\\\"\\\\\\\\u00e9\\\\\\\\ud83d\\\\\\\\ude00\\\\\\\\n\\\"')\" 0",
    "EVAL \"return cjson.decode('123')\" 0",
    "EVAL \"return cjson.decode('{bad')\" 0",
    "EVAL \"return cjson.decode('[1,2')\" 0",
    "EVAL \"return cjson.decode('')\" 0",
    "EVAL \"return cjson.decode('[1] x')\" 0",
    "EVAL \"return cjson.decode('[1,]')\" 0",
    "EVAL \"return cjson.decode('{\\\"a\\\" 1}')\" 0",
    "EVAL \"return cjson.decode('\\\"abc')\" 0",
    "EVAL \"return cjson.decode('\\\"a\\\\\\\\qb\\\"')\" 0",
    "EVAL \"return cjson.decode('[-]')\" 0",
    "EVAL \"return cjson.decode('[tru]')\" 0",
    "EVAL \"return cjson.decode()\" 0",
    "EVAL \"return cjson.encode(1, 2)\" 0",
    "EVAL \"return cjson.decode({})\" 0",
    // Replies into Lua: each type, RESP2 and RESP3, nested, errors, from a coroutine.
    "HSET rh a 1 b 2",
    "ZADD rz 1 m1 2 m2 3 m3",
    r#"EVAL "return redis.call('set', 'rk', 'v')['ok']" 0"#,
    r#"EVAL "return {redis.call('mget', 'rk', 'nokey', 'rk')}" 0"#,
    r#"EVAL "return redis.call('get', 'nokey') == false" 0"#,
    r#"EVAL "return redis.call('zpopmin', 'nozset')" 0"#,
    r#"EVAL "return redis.call('zmpop', 1, 'rz', 'min', 'count', 2)" 0"#,
    r#"EVAL "return redis.pcall('lpush', 'rh', 'x')['err']" 0"#,
    r#"EVAL "return redis.pcall('lpush', 'rh', 'x')" 0"#,
    r#"EVAL "return redis.call('incrbyfloat', 'rf', '1.5')" 0"#,
    r#"EVAL "return redis.call('incr', 'ri') + 0.5" 0"#,
    r#"EVAL "redis.setresp(3) return redis.call('get', 'nokey') == nil" 0"#,
    r#"EVAL "redis.setresp(3) local m = redis.call('hgetall', 'rh') return {m.map.a, m.map.b}" 0"#,
    r#"EVAL "redis.setresp(3) return redis.call('zmpop', 1, 'rz', 'min')[2][1][2].double" 0"#,
    r#"EVAL "redis.setresp(3) return {redis.call('mget', 'rk', 'nokey')}" 0"#,
    r#"EVAL "redis.setresp(3) return redis.call('smembers', 'noset').set ~= nil" 0"#,
    r#"EVAL "local co = coroutine.create(function() return redis.call('incr', 'rco') end) local ok, v = coroutine.resume(co) return {tostring(ok), v}" 0"#,
    r#"EVAL "return redis.call('set', 'rk', 12.25)" 0"#,
    r#"EVAL "return redis.call('get', 'rk')" 0"#,
    // min-replicas-to-write with no replica: writes refused, in scripts and out.
    "SET nr v",
    "CONFIG SET min-replicas-to-write 1",
    "CONFIG GET min-replicas-to-write",
    "CONFIG GET min-replicas-max-lag",
    "SET nr 1",
    "GET nr",
    "INCR nrc",
    r##"EVAL "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])" 1 nr"##,
    r#"EVAL "return redis.call('get', KEYS[1])" 1 nr"#,
    r##"EVAL "#!lua\nreturn redis.call('get', KEYS[1])" 1 nr"##,
    r#"EVAL "return redis.call('set', KEYS[1], 1)" 1 nr"#,
    r#"EVAL "return redis.pcall('set', KEYS[1], 1)" 1 nr"#,
    "MULTI",
    "SET nr 2",
    "EXEC",
    "CONFIG SET min-replicas-to-write -1",
    "CONFIG SET min-replicas-max-lag x",
    "CONFIG SET min-replicas-to-write 0",
    "SET nr 3",
    // CLUSTER without cluster support, and its subcommands as scripts meet them.
    "CLUSTER INFO",
    "CLUSTER RESET HARD",
    "CLUSTER FOO",
    "CLUSTER INFO x",
    "CLUSTER KEYSLOT",
    "CLUSTER",
    r#"EVAL "return redis.call('cluster', 'reset', 'hard')" 0"#,
    r#"EVAL "return redis.pcall('cluster', 'reset')" 0"#,
    r#"EVAL "return redis.call('cluster', 'info')" 0"#,
    r#"EVAL "return redis.call('cluster', 'foo')" 0"#,
    r#"EVAL "return redis.call('cluster', 'info', 'x')" 0"#,
    r#"EVAL "return redis.call('cluster')" 0"#,
    // cjson's settings, which last from one script to the next (the last ones restore the defaults).
    r#"EVAL "return {cjson.encode_sparse_array()}" 0"#,
    r#"EVAL "return cjson.encode_max_depth(0)" 0"#,
    r#"EVAL "return cjson.encode_max_depth('x')" 0"#,
    r#"EVAL "return cjson.encode_max_depth(1, 2)" 0"#,
    r#"EVAL "return cjson.encode_max_depth('  12 ')" 0"#,
    r#"EVAL "return cjson.encode_max_depth(4294967298)" 0"#,
    r#"EVAL "return cjson.encode({{{1}}})" 0"#,
    r#"EVAL "return cjson.encode({{1}})" 0"#,
    r#"EVAL "return cjson.encode_keep_buffer(1)" 0"#,
    r#"EVAL "return cjson.encode_keep_buffer({})" 0"#,
    r#"EVAL "return cjson.encode_keep_buffer('off')" 0"#,
    r#"EVAL "return {cjson.encode_sparse_array(true, -1)}" 0"#,
    r#"EVAL "return {cjson.encode_sparse_array(nil, nil, 5)}" 0"#,
    r#"EVAL "return cjson.encode({[1]=1, [2]=2, [100]=3})" 0"#,
    r#"EVAL "return {cjson.encode_sparse_array(false, 'x')}" 0"#,
    r#"EVAL "return {cjson.encode_sparse_array(false, 0)}" 0"#,
    r#"EVAL "return cjson.encode({[1]=1, [1000]=3})" 0"#,
    r#"EVAL "return cjson.encode_number_precision(3.7)" 0"#,
    r#"EVAL "return cjson.encode({1.23456789, [[k]]})" 0"#,
    r#"EVAL "return cjson.encode_number_precision(15)" 0"#,
    r#"EVAL "return cjson.encode_invalid_numbers(true)" 0"#,
    r#"EVAL "return cjson.encode({1/0, -1/0, 0/0})" 0"#,
    r#"EVAL "return cjson.encode_invalid_numbers('null')" 0"#,
    r#"EVAL "return cjson.encode({1/0, -1/0, 0/0})" 0"#,
    r#"EVAL "return cjson.encode_invalid_numbers('bad')" 0"#,
    r#"EVAL "return cjson.decode([[[0x10, -0X1f, +5, 007, 0x1.8, 1e400, 1., -.5]]])" 0"#,
    r#"EVAL "return tostring(cjson.decode('[-Infinity]')[1]) .. tostring(cjson.decode('NaN') ~= cjson.decode('nan'))" 0"#,
    r#"EVAL "return cjson.decode('[Infinit]')" 0"#,
    r#"EVAL "return cjson.decode('[0xg]')" 0"#,
    r#"EVAL "return cjson.decode('[.5]')" 0"#,
    r#"EVAL "return cjson.decode('[1.5e]')" 0"#,
    r#"EVAL "return cjson.decode('[1]\0 x')" 0"#,
    r#"EVAL "return cjson.decode('[1\0')" 0"#,
    r#"EVAL "return cjson.decode([[\"ab]] .. '\0' .. [[cd\"]])" 0"#,
    r#"EVAL "return cjson.decode_invalid_numbers(false)" 0"#,
    r#"EVAL "return cjson.decode('[0x10]')" 0"#,
    r#"EVAL "return cjson.decode('[Inf]')" 0"#,
    r#"EVAL "return cjson.decode('[-01]')" 0"#,
    r#"EVAL "return cjson.decode('[+1]')" 0"#,
    r#"EVAL "return cjson.decode('[1.]')" 0"#,
    r#"EVAL "return cjson.decode_max_depth(2)" 0"#,
    r#"EVAL "return cjson.decode('[[1]]')" 0"#,
    r#"EVAL "return cjson.decode('[{\"a\":[1]}]')" 0"#,
    r#"EVAL "return cjson.decode_max_depth(3000)" 0"#,
    r#"EVAL "return #cjson.decode(string.rep('[', 2999) .. string.rep(']', 2999))" 0"#,
    r#"EVAL "return cjson.decode(string.rep('{\"a\":', 3001) .. '1' .. string.rep('}', 3001))" 0"#,
    r#"EVAL "return {cjson.encode_sparse_array(false, 2, 10), cjson.encode_max_depth(1000), cjson.decode_max_depth(1000), cjson.encode_number_precision(14), cjson.encode_keep_buffer(true), cjson.encode_invalid_numbers(false), cjson.decode_invalid_numbers(true)}" 0"#,
    "EVAL \"return cmsgpack.pack(1, -1, 200, -200, 70000, -70000, 5000000000, 1.5, 0.1, 'abc', true, false, nil)\" 0",
    "EVAL \"return cmsgpack.pack({1,2,3}, {a=1}, {}, {[2]=1}, {a=1,b={c=2},d={1,2}})\" 0",
    "EVAL \"return cmsgpack.pack(string.rep('x', 40), string.rep('y', 300))\" 0",
    "EVAL \"return cmsgpack.pack(-2^63, 2^64, -0.5, 1e300)\" 0",
    "EVAL \"return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {1, {2}}, {k='v'}))}\" 0",
    "EVAL \"return {cmsgpack.unpack(cmsgpack.pack(-100, 1.5, 2^40, -2^40))}\" 0",
    "EVAL \"return cmsgpack.unpack(cmsgpack.pack({k='v'})).k\" 0",
    "EVAL \"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2))}\" 0",
    "EVAL \"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)}\" 0",
    "EVAL \"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2, 2)}\" 0",
    "EVAL \"return cmsgpack.unpack('')\" 0",
    "EVAL \"return cmsgpack.unpack('\\205')\" 0",
    "EVAL \"return cmsgpack.unpack('\\193')\" 0",
    "EVAL \"return cmsgpack.pack()\" 0",
    // struct.
    "EVAL \"return struct.pack('>hbI3', 258, -1, 66051)\" 0",
    "EVAL \"return {struct.unpack('>hbI3', struct.pack('>hbI3', 258, -1, 66051))}\" 0",
    "EVAL \"return struct.pack('<ic0s', 3, 'abc', 'z')\" 0",
    "EVAL \"return {struct.unpack('<ic0', struct.pack('<ic0', 3, 'abc'))}\" 0",
    "EVAL \"return struct.pack('!4bi', 1, 2)\" 0",
    "EVAL \"return struct.size('!4bih')\" 0",
    "EVAL \"return struct.size('s')\" 0",
    "EVAL \"return struct.pack('q', 1)\" 0",
    "EVAL \"return struct.pack('i40', 1)\" 0",
    "EVAL \"return {struct.unpack('i', 'ab')}\" 0",
    "EVAL \"return {struct.unpack('s', 'abc')}\" 0",
    "EVAL \"return struct.pack('d>f', 1.5, 2.25)\" 0",
    "EVAL \"return {struct.unpack('<d', struct.pack('<d', 0.1))}\" 0",
    "EVAL \"return struct.pack('c2', 'a')\" 0",
    "EVAL \"return struct.pack('!3i', 1)\" 0",
    "EVAL \"return {struct.unpack('b', 'x', 2)}\" 0",
    "EVAL \"return struct.pack('i')\" 0",
    "EVAL \"return struct.pack('L', -1)\" 0",
    "EVAL \"return struct.size('c0')\" 0",
    // The cache.
    "SCRIPT FLUSH",
    "SCRIPT LOAD \"return 'loaded'\"",
    "EVALSHA 2d3ce4e4b3e2ac2ff6f3d0a3f9e6d1b4b9cdd5d0 0",
    "SCRIPT EXISTS 2d3ce4e4b3e2ac2ff6f3d0a3f9e6d1b4b9cdd5d0 0000000000000000000000000000000000000000",
    "EVAL \"return 'cached'\" 0",
    "EVALSHA 0123456789012345678901234567890123456789 0",
    "EVALSHA abc 0",
    "SCRIPT LOAD \"return (\"",
    "SCRIPT LOAD",
    "SCRIPT FLUSH ASYNC",
    "SCRIPT FLUSH BAD",
    "SCRIPT KILL",
    "SCRIPT NOSUCH",
    // Functions.
    "FUNCTION FLUSH",
    "FUNCTION LOAD \"#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return args[1] end)\"",
    "FCALL myfunc 0 hello",
    "FCALL myfunc -1",
    "FCALL myfunc abc",
    "FCALL myfunc 3 a",
    "FCALL nosuch 0",
    "FCALL_RO myfunc 0 x",
    "FUNCTION LOAD \"#!lua name=mylib\nredis.register_function('x', function() end)\"",
    "FUNCTION LOAD REPLACE \"#!lua name=mylib\nredis.register_function{function_name='myfunc', callback=function(k, a) return redis.call('get', k[1]) end, flags={'no-writes', 'allow-oom'}, description='reads'}\"",
    "FUNCTION LIST",
    "FUNCTION LIST WITHCODE LIBRARYNAME my*",
    "FUNCTION LIST LIBRARYNAME nomatch",
    "FCALL_RO myfunc 1 s",
    "FUNCTION LOAD \"#!lua name=errs\nredis.register_function('boom', function() error('x') end)\nredis.register_function('w', function(k) return redis.call('set', k[1], 'v') end)\nredis.register_function('bad', function() return redis.call('nosuch') end)\"",
    "FCALL boom 0",
    "FCALL w 1 fk",
    "FCALL_RO w 1 fk",
    "FCALL bad 0",
    "FUNCTION STATS",
    "FUNCTION LOAD \"return 1\"",
    "FUNCTION LOAD \"#!lua\nreturn 1\"",
    "FUNCTION LOAD \"#!lua name=bad-name\nreturn 1\"",
    "FUNCTION LOAD \"#!py name=x\nreturn 1\"",
    "FUNCTION LOAD \"#!lua name=x foo=bar\nreturn 1\"",
    "FUNCTION LOAD \"#!lua name=x name=y\nreturn 1\"",
    "FUNCTION LOAD \"#!lua name=lib2\nreturn 1\"",
    "FUNCTION LOAD \"#!lua name=lib2\nredis.register_function('myfunc', function() end)\"",
    "FUNCTION LOAD \"#!lua name=lib2\nredis.register_function('bad name', function() end)\"",
    "FUNCTION LOAD \"#!lua name=lib2\nsyntax error\"",
    "FUNCTION LOAD \"#!lua name=lib2\nerror('at load')\"",
    "FUNCTION LOAD \"#!lua name=lib2\nredis.call('ping')\"",
    "FUNCTION LOAD \"#!lua name=lib2\nx = 1\"",
    "FUNCTION LOAD \"#!lua name=lib2\nlocal x = redis.setresp\"",
    "FUNCTION LOAD \"#!lua name=lib3\nredis.register_function{function_name='f3', callback=function() return 1 end, flags={'bogus'}}\"",
    "FUNCTION LOAD \"#!lua name=lib3\nredis.register_function('f3')\"",
    "FUNCTION LOAD \"#!lua name=lib3\nredis.register_function{function_name='f3'}\"",
    "FUNCTION LOAD \"#!lua name=lib3\nredis.register_function{callback=function() end}\"",
    "FUNCTION LOAD \"#!lua name=lib3\nredis.register_function{function_name='f3', callback=function() end, foo=1}\"",
    "FUNCTION LOAD \"#!lua name=lib3\nredis.register_function('f3', function() end) redis.register_function('f3', function() end)\"",
    "FUNCTION LOAD \"#!lua name=lib3\nredis.register_function('f3', 1)\"",
    "FUNCTION LOAD \"#!lua name=lib3\nredis.register_function(1, function() end)\"",
    "FUNCTION LOAD \"#!lua name=lib3\nredis.register_function()\"",
    "FUNCTION LOAD \"#!lua name=lib3\nredis.log(redis.LOG_NOTICE, 'x') redis.register_function('f3', function() return redis.REDIS_VERSION_NUM > 0 end)\"",
    "FCALL f3 0",
    "EVAL \"return redis.register_function\" 0",
    "FUNCTION DELETE lib3",
    "FUNCTION DELETE lib3",
    "FCALL f3 0",
    "FUNCTION RESTORE garbage",
    "FUNCTION RESTORE x bogus",
    // A library whose code runs past FUNCTION LOAD's 500 ms stops with Redis's error.
    "FUNCTION LOAD \"#!lua name=slow\nlocal a = 1 while 1 do a = a + 1 end\"",
    "FUNCTION LOAD \"#!lua name=collide\nredis.register_function('c1', function() return 1 end)\"",
    // Shebang lines split as Redis splits them.
    "FUNCTION LOAD \"#! name=test\nredis.register_function('foo', function() return 1 end)\"",
    "FUNCTION LOAD \"#!lua name=\\\"quoted\\\"\nredis.register_function('q', function() return 1 end)\"",
    "FUNCTION LOAD \"#!lua NAME=upper\nredis.register_function('u', function() return 1 end)\"",
    "FUNCTION LOAD \"#!lua name=\\\"open\nredis.register_function('o', function() return 1 end)\"",
    "FUNCTION LOAD \"#!nosuch foo=bar\nredis.register_function('o', function() return 1 end)\"",
    "FUNCTION LOAD \"#!nosuch\nredis.register_function('o', function() return 1 end)\"",
    "FUNCTION RESTORE x y z",
    "FUNCTION RESTORE x y z w",
    "FUNCTION KILL",
    "FUNCTION LOAD \"#!LUA name=CaseLib\nredis.register_function('CaseFn', function() return 'ok' end)\"",
    "FCALL casefn 0",
    "FCALL CASEFN 0",
    "FUNCTION LOAD \"#!lua name=caselib\nredis.register_function('other', function() return 1 end)\"",
    "FUNCTION LOAD foo bar \"#!lua name=x\nreturn 1\"",
    "FUNCTION DELETE CASELIB",
    "FCALL casefn 0",
    "SCRIPT FLUSH",
    "FCALL myfunc 1 s",
    "FUNCTION FLUSH",
    "FUNCTION DUMP",
    "CONFIG GET busy-reply-threshold",
    "CONFIG GET lua-time-limit",
    // Inside a transaction.
    "MULTI",
    "EVAL \"return redis.call('incr', 'counter')\" 0",
    "EVAL \"return redis.call('incr', 'counter')\" 0",
    "EXEC",
];

#[test]
fn scripting_replies_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.script(SCRIPT, |_| Order::Exact);
    // The SHA1 EVAL gives a script, and SCRIPT EXISTS of scripts EVAL ran.
    let sha = d.run("SCRIPT LOAD \"return 'loaded'\"", Order::Exact).0;
    let Frame::Bulk(sha) = sha else {
        panic!("SCRIPT LOAD answers a SHA1: {sha:?}")
    };
    d.run_args(&[b"EVALSHA", &sha, b"0"], Order::Exact);
    d.run_args(&[b"EVALSHA", &sha.to_ascii_uppercase(), b"0"], Order::Exact);
    d.run(
        "SCRIPT EXISTS 4bbf7ba7c6d0b0e5e2dd0c6ee1e1e6cc1e4b5e4c a9d1f4d7b9b0e1c5e3f2d6c4b8a7e6f5d4c3b2a1",
        Order::Exact,
    );
    d.compare_keyspace();
    d.assert_none();
}

/// A script reads and writes a counter in two commands; from four connections on two event loops,
/// none of the increments may be lost (no other command runs between a script's two).
#[test]
fn scripts_run_alone_across_event_loops() {
    let server = common::start_with(|o| o.threads = 2);
    let addr = server.addr();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                for _ in 0..300 {
                    let body = b"local v = tonumber(redis.call('get', KEYS[1]) or '0'); \
                                 redis.call('set', KEYS[1], v + 1); return v + 1";
                    assert!(matches!(
                        c.cmd(&[b"EVAL", body, b"1", b"n"]).read(),
                        Frame::Integer(_)
                    ));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let mut c = Raw::connect(addr);
    assert_eq!(c.cmd(&[b"GET", b"n"]).read(), common::bulk("1200"));
}

/// A client blocked on a list is served by a script's push once the script is done.
#[test]
fn a_script_push_wakes_a_blocked_client() {
    let server = common::start_with(|o| o.threads = 2);
    let addr: SocketAddr = server.addr();
    let mut blocked = Raw::connect(addr);
    blocked.cmd(&[b"BLPOP", b"queue", b"5"]);
    std::thread::sleep(Duration::from_millis(100));
    let mut c = Raw::connect(addr);
    let body = b"redis.call('rpush', KEYS[1], 'job'); return redis.call('llen', KEYS[1])";
    assert_eq!(c.cmd(&[b"EVAL", body, b"1", b"queue"]).read(), Frame::Integer(1));
    assert_eq!(
        blocked.read(),
        Frame::Array(vec![common::bulk("queue"), common::bulk("job")])
    );
}

/// A script that allocates without bound gets an error, and the server goes on.
#[test]
fn a_script_that_allocates_without_bound_gets_an_error() {
    let server = common::start();
    let mut c = Raw::connect(server.addr());
    let body = b"local t = {} local s = string.rep('x', 1024 * 1024) \
                 for i = 1, 100000 do t[i] = s .. i end return #t";
    match c.cmd(&[b"EVAL", body, b"0"]).read() {
        Frame::Error(e) => assert!(e.contains("not enough memory"), "{e}"),
        other => panic!("expected an error, got {other:?}"),
    }
    assert_eq!(
        c.cmd(&[b"EVAL", b"return 'alive'", b"0"]).read(),
        common::bulk("alive")
    );
}

fn have_redis_py() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import redis"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok || std::env::var("CI").as_deref() != Ok("true"),
        "python3 with redis-py is not installed, and CI=true: install it (pip install redis)"
    );
    ok
}

/// redis-py's `Lock` (acquire, extend, release: each a script), threads contending for it, and
/// `register_script` (EVALSHA, falling back to EVAL after SCRIPT FLUSH).
const REDIS_PY_SCRIPT: &str = r#"
import sys, threading, redis
port = int(sys.argv[1])
r = redis.Redis(port=port)
r.flushall()
counter = {"n": 0, "inside": 0, "overlap": False}
def worker():
    c = redis.Redis(port=port)
    for _ in range(50):
        with c.lock("resource", timeout=5, blocking_timeout=10):
            counter["inside"] += 1
            if counter["inside"] != 1:
                counter["overlap"] = True
            counter["n"] += 1
            counter["inside"] -= 1
ts = [threading.Thread(target=worker) for _ in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
assert counter["n"] == 200 and not counter["overlap"], counter
lock = r.lock("other", timeout=10)
assert lock.acquire(blocking=False)
assert not r.lock("other").acquire(blocking=False)
assert lock.extend(5)
assert lock.release() is None
assert r.get("other") is None
multiply = r.register_script("local v = redis.call('get', KEYS[1]) or 1; return v * ARGV[1]")
r.set("x", 6)
assert multiply(keys=["x"], args=[7]) == 42
r.script_flush()
assert multiply(keys=["x"], args=[2]) == 12
try:
    r.eval("return redis.call('incr', KEYS[1])", 1, "s") if r.set("s", "text") else None
    raise SystemExit("a failing command must raise")
except redis.ResponseError as e:
    assert "not an integer" in str(e), e
print("ok")
"#;

#[test]
fn redis_py_lock_and_registered_scripts_work() {
    if !have_redis_py() {
        return;
    }
    let server = common::start_with(|o| o.threads = 2);
    let out = std::process::Command::new("python3")
        .args(["-c", REDIS_PY_SCRIPT, &server.addr().port().to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.starts_with(b"ok"),
        "redis-py:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A script past `busy-reply-threshold` is busy: every other connection, on the script's own event loop
/// or another, answers BUSY; SCRIPT KILL from either stops it (even through pcall), and one that wrote
/// cannot be killed. With one loop too: the busy script lets its loop go to another thread.
#[test]
fn a_busy_script_answers_busy_and_script_kill_stops_it() {
    for threads in [1, 2] {
        let server = common::start_with(|o| o.threads = threads);
        let addr = server.addr();
        // Connections in a row go round the loops: with two, `same` shares the runner's loop.
        let mut runner = Raw::connect(addr);
        let mut other = Raw::connect(addr);
        let mut same = Raw::connect(addr);
        assert_eq!(
            other
                .cmd(&[b"CONFIG", b"SET", b"busy-reply-threshold", b"100"])
                .read(),
            common::simple("OK")
        );
        assert_eq!(
            other.cmd(&[b"SCRIPT", b"KILL"]).read(),
            common::err("NOTBUSY No scripts in execution right now.")
        );
        let bodies = [
            &b"while true do end"[..],
            b"while true do pcall(function() while true do end end) end",
        ];
        for (i, body) in bodies.into_iter().enumerate() {
            // The killer takes turns: another loop's connection, then one on the runner's loop.
            let (killer, bystander) = if i % 2 == 0 {
                (&mut other, &mut same)
            } else {
                (&mut same, &mut other)
            };
            // A request pipelined behind the script runs once it is killed.
            runner.cmd(&[b"EVAL", body, b"0"]).cmd(&[b"PING"]);
            std::thread::sleep(Duration::from_millis(300));
            for c in [&mut *killer, &mut *bystander] {
                match c.cmd(&[b"PING"]).read() {
                    Frame::Error(e) => assert!(e.starts_with("BUSY Redis is busy running a script."), "{e}"),
                    f => panic!("PING during a busy script ({threads} loops): {f:?}"),
                }
            }
            let busy_eval =
                "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
            assert_eq!(killer.cmd(&[b"FUNCTION", b"KILL"]).read(), common::err(busy_eval));
            assert_eq!(
                killer.cmd(&[b"FUNCTION", b"STATS"]).read(),
                common::err(busy_eval)
            );
            assert_eq!(killer.cmd(&[b"SCRIPT", b"KILL"]).read(), common::simple("OK"));
            match runner.read() {
                Frame::Error(e) => assert!(
                    e.starts_with("ERR Script killed by user with SCRIPT KILL..."),
                    "{e}"
                ),
                f => panic!("a killed script answers an error: {f:?}"),
            }
            assert_eq!(runner.read(), common::simple("PONG"));
            for c in [&mut runner, killer, bystander] {
                assert_eq!(c.cmd(&[b"PING"]).read(), common::simple("PONG"));
            }
        }
        let writes_then_waits = b"redis.call('set', 'w', 1) local s = tonumber(redis.call('time')[1]) \
            while tonumber(redis.call('time')[1]) < s + 2 do end return 'done'";
        runner.cmd(&[b"EVAL", writes_then_waits, b"0"]);
        std::thread::sleep(Duration::from_millis(300));
        match same.cmd(&[b"SCRIPT", b"KILL"]).read() {
            Frame::Error(e) => assert!(e.starts_with("UNKILLABLE"), "{e}"),
            f => panic!("SCRIPT KILL of a script that wrote: {f:?}"),
        }
        assert_eq!(runner.read(), common::bulk("done"));
        // A busy function: SCRIPT KILL does not stop it, FUNCTION KILL does (from the runner's loop).
        let library = b"#!lua name=busy\nredis.register_function('spin', function() while true do end end)";
        assert_eq!(
            runner.cmd(&[b"FUNCTION", b"LOAD", library]).read(),
            common::bulk("busy")
        );
        runner.cmd(&[b"FCALL", b"spin", b"0"]);
        std::thread::sleep(Duration::from_millis(300));
        let busy_function =
            "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
        assert_eq!(same.cmd(&[b"PING"]).read(), common::err(busy_function));
        assert_eq!(same.cmd(&[b"SCRIPT", b"KILL"]).read(), common::err(busy_function));
        // FUNCTION STATS answers while the function runs (it holds the libraries' lock).
        match same.cmd(&[b"FUNCTION", b"STATS"]).read() {
            Frame::Array(items) => match &items[1] {
                Frame::Array(call) => {
                    assert_eq!(call[1], common::bulk("spin"));
                    assert_eq!(
                        call[3],
                        Frame::Array(vec![
                            common::bulk("FCALL"),
                            common::bulk("spin"),
                            common::bulk("0")
                        ])
                    );
                }
                f => panic!("FUNCTION STATS's running_script during a busy function: {f:?}"),
            },
            f => panic!("FUNCTION STATS during a busy function: {f:?}"),
        }
        assert_eq!(same.cmd(&[b"FUNCTION", b"KILL"]).read(), common::simple("OK"));
        match runner.read() {
            Frame::Error(e) => assert!(e.contains("killed by user"), "{e}"),
            f => panic!("a killed function answers an error: {f:?}"),
        }
        assert_eq!(same.cmd(&[b"PING"]).read(), common::simple("PONG"));
        server.shutdown().unwrap();
    }
}

/// SHUTDOWN NOSAVE is accepted during a busy script, which stops too (even one that wrote).
#[test]
fn shutdown_nosave_ends_a_busy_script() {
    let server = common::start_with(|o| o.threads = 2);
    let addr = server.addr();
    let mut runner = Raw::connect(addr);
    let mut other = Raw::connect(addr);
    other
        .cmd(&[b"CONFIG", b"SET", b"busy-reply-threshold", b"100"])
        .read();
    runner.cmd(&[b"EVAL", b"redis.call('set', 'w', 1) while true do end", b"0"]);
    std::thread::sleep(Duration::from_millis(300));
    match other.cmd(&[b"SHUTDOWN"]).read() {
        Frame::Error(e) => assert!(e.starts_with("BUSY"), "{e}"),
        f => panic!("SHUTDOWN without NOSAVE during a busy script: {f:?}"),
    }
    other.cmd(&[b"SHUTDOWN", b"NOSAVE"]);
    assert!(other.closed(), "SHUTDOWN NOSAVE closes the connection");
    assert!(matches!(runner.try_read(), Some(Frame::Error(_)) | None));
    server.shutdown().unwrap();
}

/// FUNCTION DUMP's payload moves both ways: Redis's (LZF-compressed) restores into hopless, and
/// hopless's into Redis; FUNCTION RESTORE's policies.
#[test]
fn function_dumps_move_between_redis_and_hopless() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    let lib = "#!lua name=moving\nredis.register_function('twice', function(keys, args) \
               return args[1] .. args[1] end) -- padding so that Redis compresses the code: \
               aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    for r in [&mut d.redis, &mut d.ours] {
        r.cmd(&[b"FUNCTION", b"FLUSH"]).read();
    }
    assert_eq!(
        d.redis.cmd(&[b"FUNCTION", b"LOAD", lib.as_bytes()]).read(),
        common::bulk("moving")
    );
    let Frame::Bulk(theirs) = d.redis.cmd(&[b"FUNCTION", b"DUMP"]).read() else {
        panic!("FUNCTION DUMP answers a payload")
    };
    assert_eq!(
        d.ours.cmd(&[b"FUNCTION", b"RESTORE", &theirs]).read(),
        common::simple("OK")
    );
    assert_eq!(
        d.ours.cmd(&[b"FCALL", b"twice", b"0", b"ab"]).read(),
        common::bulk("abab")
    );
    // APPEND (the default) refuses a library that exists, and one with a function another library
    // has, worded as Redis words them; REPLACE and FLUSH take it.
    assert_eq!(
        d.ours.cmd(&[b"FUNCTION", b"RESTORE", &theirs]).read(),
        d.redis.cmd(&[b"FUNCTION", b"RESTORE", &theirs]).read()
    );
    let other = "#!lua name=other\nredis.register_function('twice', function() return 1 end)";
    for r in [&mut d.redis, &mut d.ours] {
        r.cmd(&[b"FUNCTION", b"DELETE", b"moving"]).read();
        assert_eq!(
            r.cmd(&[b"FUNCTION", b"LOAD", other.as_bytes()]).read(),
            common::bulk("other")
        );
    }
    let collision = d.redis.cmd(&[b"FUNCTION", b"RESTORE", &theirs]).read();
    assert!(matches!(collision, Frame::Error(_)), "{collision:?}");
    assert_eq!(d.ours.cmd(&[b"FUNCTION", b"RESTORE", &theirs]).read(), collision);
    for r in [&mut d.redis, &mut d.ours] {
        r.cmd(&[b"FUNCTION", b"DELETE", b"other"]).read();
    }
    for policy in [&b"REPLACE"[..], b"FLUSH"] {
        assert_eq!(
            d.ours.cmd(&[b"FUNCTION", b"RESTORE", &theirs, policy]).read(),
            common::simple("OK")
        );
    }
    let Frame::Bulk(ours) = d.ours.cmd(&[b"FUNCTION", b"DUMP"]).read() else {
        panic!("FUNCTION DUMP answers a payload")
    };
    d.redis.cmd(&[b"FUNCTION", b"FLUSH"]).read();
    assert_eq!(
        d.redis.cmd(&[b"FUNCTION", b"RESTORE", &ours]).read(),
        common::simple("OK")
    );
    assert_eq!(
        d.redis.cmd(&[b"FCALL", b"twice", b"0", b"x"]).read(),
        common::bulk("xx")
    );
    // A payload with a bad checksum changes nothing.
    let mut bad = ours.to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    d.ours.cmd(&[b"FUNCTION", b"FLUSH"]).read();
    match d.ours.cmd(&[b"FUNCTION", b"RESTORE", &bad]).read() {
        Frame::Error(e) => assert_eq!(e, "ERR DUMP payload version or checksum are wrong"),
        f => panic!("{f:?}"),
    }
    assert_eq!(
        d.ours.cmd(&[b"FCALL", b"twice", b"0", b"x"]).read(),
        common::err("ERR Function not found")
    );
}

/// A fixed-window rate limiter (INCR, PEXPIRE on the first hit, compare), as rate-limiting libraries
/// run it with EVALSHA: four clients on two event loops, 100 tries each against a limit of 150, are
/// allowed exactly 150 between them.
#[test]
fn a_rate_limiter_script_allows_exactly_its_limit_across_clients() {
    let server = common::start_with(|o| o.threads = 2);
    let addr = server.addr();
    let limiter = b"local n = redis.call('incr', KEYS[1]) \
        if n == 1 then redis.call('pexpire', KEYS[1], ARGV[2]) end \
        if n > tonumber(ARGV[1]) then return 0 end return 1";
    let Frame::Bulk(sha) = Raw::connect(addr).cmd(&[b"SCRIPT", b"LOAD", limiter]).read() else {
        panic!("SCRIPT LOAD answers the SHA1")
    };
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let sha = sha.clone();
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                (0..100)
                    .filter(|_| {
                        c.cmd(&[b"EVALSHA", &sha, b"1", b"rate:user", b"150", b"60000"])
                            .read()
                            == Frame::Integer(1)
                    })
                    .count()
            })
        })
        .collect();
    let allowed: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    assert_eq!(allowed, 150);
    let mut c = Raw::connect(addr);
    assert!(matches!(c.cmd(&[b"PTTL", b"rate:user"]).read(), Frame::Integer(t) if t > 0 && t <= 60000));
}

/// A script returning a table that holds itself: Redis writes nested arrays until Lua's C stack would
/// overflow (7 995 levels), then `-ERR reached lua stack limit`; hopless stops the same way at 1 000
/// levels (each level holds a reference slot of mlua's, which has about 8 000) and goes on serving.
/// Read as raw bytes: the nesting is deeper than a frame parser takes.
#[test]
fn a_table_that_holds_itself_ends_in_an_error() {
    use std::io::{Read, Write};
    let server = common::start();
    let body = b"local t = {} t[1] = t return t";
    let mut request = format!("*3\r\n$4\r\nEVAL\r\n${}\r\n", body.len()).into_bytes();
    request.extend_from_slice(body);
    request.extend_from_slice(b"\r\n$1\r\n0\r\n");
    let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
    s.write_all(&request).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    while !got.ends_with(b"-ERR reached lua stack limit\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the connection closed");
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got.len(), 1000 * 4 + b"-ERR reached lua stack limit\r\n".len());
    assert!(got.chunks(4).take(1000).all(|c| c == b"*1\r\n"));
    let mut c = Raw::connect(server.addr());
    assert_eq!(c.cmd(&[b"PING"]).read(), common::simple("PONG"));
}

/// Scripts that handle tens of thousands of values at once (mlua holds a reference slot for each live
/// value, and has about 8 000): a returned array and map of strings, cmsgpack of a big map, a command
/// called with 7 000 arguments.
#[test]
fn scripts_with_many_values_go_through() {
    let server = common::start();
    let mut c = Raw::connect(server.addr());
    let strings = b"local t = {} for i = 1, 20000 do t[i] = tostring(i) end return t";
    match c.cmd(&[b"EVAL", strings, b"0"]).read() {
        Frame::Array(items) => {
            assert_eq!(items.len(), 20000);
            assert_eq!(items[19999], common::bulk("20000"));
        }
        f => panic!("{f:?}"),
    }
    let map = b"local m = {} for i = 1, 20000 do m['k' .. i] = 'v' .. i end return {map = m}";
    match c.cmd(&[b"EVAL", map, b"0"]).read() {
        Frame::Array(items) => assert_eq!(items.len(), 40000),
        f => panic!("{f:?}"),
    }
    let packed = b"local t = {} for i = 1, 100000 do t[tostring(i)] = i end \
                   local u = cmsgpack.unpack(cmsgpack.pack(t)) return u['99999']";
    assert_eq!(c.cmd(&[b"EVAL", packed, b"0"]).read(), Frame::Integer(99999));
    let args =
        b"local t = {} for i = 1, 7000 do t[i] = 'm' .. i end return redis.call('sadd', 'big', unpack(t))";
    assert_eq!(c.cmd(&[b"EVAL", args, b"0"]).read(), Frame::Integer(7000));
    assert_eq!(c.cmd(&[b"PING"]).read(), common::simple("PONG"));
}

/// INFO's counts after a script's errors, as Redis keeps them: a command a script calls and is refused
/// is a rejected call of that command and its error is counted once (not again when the script ends in
/// it); a script that replies an error is a failed call of EVAL. Compared, after each case, as
/// errorstats, `total_error_replies` and each command's calls, rejected and failed calls.
#[test]
fn script_errors_count_as_redis_counts_them() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    let cases: &[(bool, &[&[u8]])] = &[
        (true, &[b"EVAL", b"return redis.call('set','x','y')", b"1", b"x"]),
        (
            true,
            &[
                b"EVAL",
                b"local t = redis.pcall('set','x','y') return t['err']",
                b"1",
                b"x",
            ],
        ),
        (true, &[b"EVAL", b"return redis.pcall('set','x','y')", b"1", b"x"]),
        (false, &[b"EVAL", b"return redis.call('select',99)", b"0"]),
        (
            false,
            &[
                b"EVAL",
                b"local t = redis.pcall('select',99) return t['err']",
                b"0",
            ],
        ),
        (
            false,
            &[b"EVAL_RO", b"return redis.call('set','x','y')", b"1", b"x"],
        ),
        (
            false,
            &[
                b"EVAL_RO",
                b"local t = redis.pcall('set','x','y') return t['err']",
                b"1",
                b"x",
            ],
        ),
        (false, &[b"EVAL", b"return redis.call('nosuch')", b"0"]),
        (false, &[b"EVAL", b"return redis.call('get')", b"0"]),
        (false, &[b"EVAL", b"return redis.call('multi')", b"0"]),
        (
            false,
            &[b"EVAL", b"return redis.error_reply('MY_ERR custom')", b"0"],
        ),
        (false, &[b"EVAL", b"error('boom')", b"0"]),
        (false, &[b"EVAL", b"return {err='XX y'}", b"0"]),
        (
            false,
            &[
                b"EVAL",
                b"redis.call('set','s','a') return redis.call('lpush','s','a')",
                b"0",
            ],
        ),
        (false, &[b"EVAL", b"return redis.call('incr','n')", b"0"]),
        (false, &[b"FCALL", b"nosuch", b"0"]),
        (
            false,
            &[b"EVALSHA", b"0000000000000000000000000000000000000000", b"0"],
        ),
    ];
    for (over_limit, case) in cases {
        let mut counts = Vec::new();
        for server in [&mut d.redis, &mut d.ours] {
            server.cmd(&[b"DEL", b"s", b"n"]).read();
            server.cmd(&[b"CONFIG", b"RESETSTAT"]).read();
            if *over_limit {
                server.cmd(&[b"CONFIG", b"SET", b"maxmemory", b"1"]).read();
            }
            let reply = server.cmd(case).read();
            if *over_limit {
                server.cmd(&[b"CONFIG", b"SET", b"maxmemory", b"0"]).read();
            }
            counts.push((reply, script_error_counts(server)));
        }
        assert_eq!(counts[0], counts[1], "{:?}", String::from_utf8_lossy(case[1]));
    }
}

/// INFO errorstats, `total_error_replies`, and each `cmdstat_` line without its times, sorted; not
/// INFO's and CONFIG's, whose subcommands Redis counts apart.
fn script_error_counts(server: &mut Raw) -> Vec<String> {
    let mut text = |section: &[u8]| match server.cmd(&[b"INFO", section]).read() {
        Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        f => panic!("{f:?}"),
    };
    let (errors, stats, commands) = (text(b"errorstats"), text(b"stats"), text(b"commandstats"));
    let mut lines: Vec<String> = errors
        .lines()
        .filter(|l| l.starts_with("errorstat_"))
        .chain(stats.lines().filter(|l| l.starts_with("total_error_replies:")))
        .map(str::to_string)
        .collect();
    for l in commands.lines().filter(|l| l.starts_with("cmdstat_")) {
        let (name, fields) = l.split_once(':').unwrap_or((l, ""));
        if name.starts_with("cmdstat_config") || name == "cmdstat_info" {
            continue;
        }
        let kept: Vec<&str> = fields.split(',').filter(|f| !f.starts_with("usec")).collect();
        lines.push(format!("{name}:{}", kept.join(",")));
    }
    lines.sort();
    lines
}

/// A state that runs many short scripts stays near its live size: 10 000 EVALs, INFO's
/// `used_memory_lua` read after every 100, never past the 100 KB Redis's own unit/scripting allows.
#[test]
fn many_short_scripts_leave_little_garbage() {
    let server = common::start();
    let mut c = Raw::connect(server.addr());
    let body: &[u8] = b"return redis.call('incr', KEYS[1])";
    let mut peak = 0u64;
    for _ in 0..100 {
        for _ in 0..100 {
            c.cmd(&[b"EVAL", body, b"1", b"x"]);
        }
        for _ in 0..100 {
            c.read();
        }
        let Frame::Bulk(info) = c.cmd(&[b"INFO", b"memory"]).read() else {
            panic!("INFO answers a bulk string")
        };
        let info = String::from_utf8_lossy(&info).into_owned();
        let lua = info
            .lines()
            .find_map(|l| l.strip_prefix("used_memory_lua:"))
            .and_then(|v| v.parse::<u64>().ok())
            .expect("used_memory_lua");
        peak = peak.max(lua);
    }
    assert_eq!(c.cmd(&[b"GET", b"x"]).read(), common::bulk("10000"));
    assert!(peak < 100 * 1024, "used_memory_lua reached {peak}");
}

/// JSON nested past what the library can hold, with cjson's depth limits raised as far as they go: an
/// error (lua-cjson's, a little before the depth at which Redis gives it), never a dead server.
#[test]
fn json_nested_past_the_limits_ends_in_an_error() {
    let server = common::start();
    let mut c = Raw::connect(server.addr());
    let raise = b"return {cjson.encode_max_depth(2147483647), cjson.decode_max_depth(2147483647)}";
    c.cmd(&[b"EVAL", raise, b"0"]).read();
    for (body, error) in [
        (
            &b"local t = {} local c = t for i = 1, 20000 do c[1] = {} c = c[1] end return cjson.encode(t)"[..],
            "Cannot serialise, excessive nesting",
        ),
        (
            b"local t = {} local c = t for i = 1, 20000 do c.a = {} c = c.a end return cjson.encode(t)",
            "Cannot serialise, excessive nesting",
        ),
        (
            b"return cjson.decode(string.rep('[', 20000) .. string.rep(']', 20000))",
            "Found too many nested data structures",
        ),
        (
            b"return cjson.decode(string.rep('{\"a\":', 20000) .. '1' .. string.rep('}', 20000))",
            "Found too many nested data structures",
        ),
    ] {
        match c.cmd(&[b"EVAL", body, b"0"]).read() {
            Frame::Error(e) => assert!(e.contains(error), "{e}"),
            f => panic!("{f:?}"),
        }
    }
    let deep_but_allowed = b"return #cjson.decode(string.rep('[', 3000) .. string.rep(']', 3000))";
    assert_eq!(
        c.cmd(&[b"EVAL", deep_but_allowed, b"0"]).read(),
        Frame::Integer(1)
    );
    assert_eq!(c.cmd(&[b"PING"]).read(), common::simple("PONG"));
}

/// What Redis's own unit/scripting tries against the sandbox: a script must not reach the globals'
/// metatable and point it elsewhere for every later script, load bytecode, or be refused a call with
/// 7 999 arguments.
#[test]
fn the_sandbox_holds_against_redis_own_tricks() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.script(
        &[
            "EVAL \"local g = getmetatable(_G) g.__index = {}\" 0",
            "EVAL \"rawset(getmetatable(_G), '__index', {})\" 0",
            "EVAL \"setmetatable(getmetatable(_G), {})\" 0",
            "EVAL \"getmetatable('').__index = {}\" 0",
            "EVAL \"return redis.call('ping')\" 0",
            "EVAL \"return ('x'):rep(3)\" 0",
            "EVAL \"return loadstring(string.dump(function() return 1 end))()\" 0",
            "EVAL \"local a = {} for i = 1, 7999 do a[i] = 1 end return redis.call('lpush', 'l', unpack(a))\" 0",
        ],
        |_| Order::Exact,
    );
    d.assert_none();
}
