//! Redis 7.0's functions: libraries of Lua functions loaded with FUNCTION LOAD (`#!lua name=<lib>`,
//! then code that calls `redis.register_function`), called with FCALL, listed, deleted, dumped and
//! restored. They live in a Lua state of their own, as Redis's do (SCRIPT FLUSH leaves them), whose
//! globals while a library's code runs hold only `redis.register_function`, `redis.log` and the
//! constants, and the whole API once it is loaded.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use mlua::{Function, Lua, MultiValue, RegistryKey, Value};

use super::convert;
use super::dump;
use super::host::{run_with_host, string_arrays, write_script_error, Host};
use super::running::Running;
use super::sandbox::{self, RunState, REGISTER, RUN_WITH, SET_API};
use crate::codec::Reply;

/// A function of a library, as FUNCTION LIST shows it.
pub struct FunctionInfo {
    pub name: String,
    pub description: Option<Vec<u8>>,
    /// Its flags, in the order Redis lists them.
    pub flags: Vec<&'static str>,
    callback: RegistryKey,
}

pub struct Library {
    pub name: String,
    pub code: Vec<u8>,
    pub functions: Vec<FunctionInfo>,
}

/// The flags a function may declare, in the order FUNCTION LIST shows them.
const FLAGS: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

pub struct Functions {
    lua: Lua,
    /// The prelude's runner of a function with its two tables, and Lua's `next` (looked up once).
    run_with: Function,
    next: Function,
    running: Arc<Running>,
    /// By name (case-sensitive, as Redis's library names are).
    libraries: BTreeMap<String, Library>,
    /// Function name, lower-cased (matched in any case, as in Redis) → its library's name.
    index: HashMap<String, String>,
}

/// A function registered by a library's code as it loads.
struct Registered {
    name: String,
    description: Option<Vec<u8>>,
    flags: Vec<&'static str>,
    callback: Function,
}

/// Redis's rule for library and function names.
fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

const BAD_LIBRARY_NAME: &str =
    "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// The library name of a library's code and where its Lua code starts (its shebang line's newline, kept
/// so line numbers stay), or Redis's error.
fn metadata(code: &[u8]) -> Result<(String, usize), String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let nl = code.iter().position(|&b| b == b'\n').unwrap_or(code.len());
    // Split as Redis splits it (`sdssplitargs`: quotes, escapes), the `#!` and the engine one word.
    let parts = match crate::codec::split_args(&code[..nl]) {
        Some(parts) if !parts.is_empty() => parts,
        _ => return Err("ERR Invalid library metadata".into()),
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let engine = text(parts[0].get(2..).unwrap_or_default());
    let mut name = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err("ERR Invalid metadata value, name argument was given multiple times".into());
            }
            name = Some(text(&part[5..]));
        } else {
            return Err(format!("ERR Invalid metadata value given: {}", text(part)));
        }
    }
    let name = name.ok_or("ERR Library name was not given")?;
    // Engine names are matched in any case, as Redis matches them.
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    if !valid_name(name.as_bytes()) {
        return Err(BAD_LIBRARY_NAME.into());
    }
    Ok((name, nl))
}

/// `redis.register_function`'s arguments: positional (`name, callback`) or named (a table of
/// `function_name`, `callback`, `flags`, `description`), checked as Redis checks them; the error text
/// (without its `ERR`) otherwise.
fn registration(args: MultiValue) -> Result<Registered, &'static str> {
    let args: Vec<Value> = args.into_iter().collect();
    let (mut name, mut callback, mut flags, mut description) = (None, None, Vec::new(), None);
    match args.as_slice() {
        [Value::Table(t)] => {
            for pair in t.clone().pairs::<Value, Value>() {
                let (k, v) = pair.map_err(|_| "unknown argument given to redis.register_function")?;
                let Value::String(k) = k else {
                    return Err("named argument key given to redis.register_function is not a string");
                };
                match &*k.as_bytes() {
                    b"function_name" => {
                        match v {
                            Value::String(s) => name = Some(s.as_bytes().to_vec()),
                            _ => return Err(
                                "function_name argument given to redis.register_function must be a string",
                            ),
                        }
                    }
                    b"description" => match v {
                        Value::String(s) => description = Some(s.as_bytes().to_vec()),
                        _ => {
                            return Err(
                                "description argument given to redis.register_function must be a string",
                            )
                        }
                    },
                    b"callback" => match v {
                        Value::Function(f) => callback = Some(f),
                        _ => {
                            return Err(
                                "callback argument given to redis.register_function must be a function",
                            )
                        }
                    },
                    b"flags" => {
                        let Value::Table(list) = v else {
                            return Err(
                                "flags argument to redis.register_function must be a table representing function flags",
                            );
                        };
                        for f in list.sequence_values::<Value>() {
                            let Ok(Value::String(f)) = f else {
                                return Err("unknown flag given");
                            };
                            let f = FLAGS
                                .iter()
                                .find(|known| known.as_bytes() == &*f.as_bytes())
                                .ok_or("unknown flag given")?;
                            if !flags.contains(f) {
                                flags.push(*f);
                            }
                        }
                    }
                    _ => return Err("unknown argument given to redis.register_function"),
                }
            }
        }
        [_] => {
            return Err(
                "calling redis.register_function with a single argument is only applicable to Lua table \
                        (representing named arguments).",
            )
        }
        [first, second] => {
            // A number will do, as Lua's `lua_isstring` takes it.
            let n = match first {
                Value::String(n) => n.as_bytes().to_vec(),
                Value::Integer(i) => convert::fmt_g(*i as f64, 14).into_bytes(),
                Value::Number(x) => convert::fmt_g(*x, 14).into_bytes(),
                _ => return Err("first argument to redis.register_function must be a string"),
            };
            let Value::Function(f) = second else {
                return Err("second argument to redis.register_function must be a function");
            };
            name = Some(n);
            callback = Some(f.clone());
        }
        _ => return Err("wrong number of arguments to redis.register_function"),
    }
    let name = name.ok_or("redis.register_function must get a function name argument")?;
    let callback = callback.ok_or("redis.register_function must get a callback argument")?;
    if !valid_name(&name) {
        // Redis 7.0 words a bad function name as a bad library name.
        return Err(&BAD_LIBRARY_NAME[4..]);
    }
    flags.sort_by_key(|f| FLAGS.iter().position(|k| k == f));
    Ok(Registered {
        name: String::from_utf8_lossy(&name).into_owned(),
        description,
        flags,
        callback,
    })
}

impl Functions {
    pub fn new(running: Arc<Running>) -> Self {
        let lua = sandbox::new_state(running.clone()).expect("the Lua sandbox builds");
        let run_with = lua
            .named_registry_value(RUN_WITH)
            .expect("the prelude's runner is in the registry");
        let next = lua
            .named_registry_value::<mlua::Table>(sandbox::REAL_GLOBALS)
            .and_then(|g| g.raw_get("next"))
            .expect("the sandbox's globals hold next");
        Functions {
            lua,
            run_with,
            next,
            running,
            libraries: BTreeMap::new(),
            index: HashMap::new(),
        }
    }

    pub fn libraries(&self) -> impl Iterator<Item = &Library> {
        self.libraries.values()
    }

    pub fn function_count(&self) -> usize {
        self.index.len()
    }

    /// FUNCTION FLUSH.
    pub fn flush(&mut self) {
        *self = Functions::new(self.running.clone());
    }

    /// FUNCTION DELETE: whether the library was there.
    pub fn delete(&mut self, name: &[u8]) -> bool {
        let Some(lib) = self.libraries.remove(&*String::from_utf8_lossy(name)) else {
            return false;
        };
        for f in lib.functions {
            self.index.remove(&f.name.to_lowercase());
            let _ = self.lua.remove_registry_value(f.callback);
        }
        true
    }

    /// FUNCTION LOAD [REPLACE]: the library's name, or Redis's error text.
    pub fn load(&mut self, code: &[u8], replace: bool) -> Result<String, String> {
        let (name, start) = metadata(code)?;
        let key = name.clone();
        if self.libraries.contains_key(&key) && !replace {
            return Err(format!("ERR Library '{name}' already exists"));
        }
        let chunk = self
            .lua
            .load(&code[start..])
            .set_name("@user_function")
            .into_function()
            .map_err(|e| {
                let msg = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    other => other.to_string(),
                };
                format!("ERR Error compiling function: {msg}")
            })?;
        self.running.loading(true);
        let registered = self.run_library_code(&chunk);
        self.running.loading(false);
        let registered = registered?;
        if registered.is_empty() {
            return Err("ERR No functions registered".into());
        }
        for r in &registered {
            if self
                .index
                .get(&r.name.to_lowercase())
                .is_some_and(|lib| *lib != key)
            {
                return Err(format!("ERR Function {} already exists", r.name));
            }
        }
        self.delete(name.as_bytes());
        let mut functions = Vec::with_capacity(registered.len());
        for r in registered {
            let callback = self
                .lua
                .create_registry_value(r.callback)
                .map_err(|e| format!("ERR {e}"))?;
            self.index.insert(r.name.to_lowercase(), key.clone());
            functions.push(FunctionInfo {
                name: r.name,
                description: r.description,
                flags: r.flags,
                callback,
            });
        }
        self.libraries.insert(
            key,
            Library {
                name: name.clone(),
                code: code.to_vec(),
                functions,
            },
        );
        Ok(name)
    }

    /// Runs a library's compiled code with FUNCTION LOAD's API: the functions it registered, or Redis's
    /// error text.
    fn run_library_code(&self, chunk: &Function) -> Result<Vec<Registered>, String> {
        let lua = &self.lua;
        let fail = |e: mlua::Error| format!("ERR {e}");
        let set_api: Function = lua.named_registry_value(SET_API).map_err(fail)?;
        let xpcall: Function = lua.named_registry_value("hopless.xpcall").map_err(fail)?;
        let handler: Function = lua.named_registry_value(sandbox::HANDLER).map_err(fail)?;
        let mut registered: Vec<Registered> = Vec::new();
        let outcome = lua.scope(|scope| {
            let register = scope.create_function_mut(|lua, args: MultiValue| {
                let failed = |msg: String| -> mlua::Result<(Value, bool)> {
                    Ok((Value::Table(convert::error_table(lua, &msg, false)?), true))
                };
                match registration(args) {
                    Ok(r) if registered.iter().any(|x| x.name.eq_ignore_ascii_case(&r.name)) => {
                        failed("Function already exists in the library".into())
                    }
                    Ok(r) => {
                        registered.push(r);
                        Ok((Value::Nil, false))
                    }
                    Err(msg) => failed(msg.into()),
                }
            })?;
            lua.set_named_registry_value(REGISTER, register)?;
            set_api.call::<()>(true)?;
            let r: MultiValue = sandbox::limited(lua, || xpcall.call((chunk.clone(), handler)))?;
            set_api.call::<()>(false)?;
            lua.set_named_registry_value(REGISTER, Value::Nil)?;
            let mut r = r.into_iter();
            let ok = matches!(r.next(), Some(Value::Boolean(true)));
            Ok(if ok {
                None
            } else {
                Some(r.next().unwrap_or(Value::Nil))
            })
        });
        match outcome {
            Ok(None) => Ok(registered),
            Ok(Some(err)) => Err(format!(
                "ERR Error registering functions: {}",
                error_message(&err)
            )),
            Err(e) => Err(format!("ERR Error registering functions: {e}")),
        }
    }

    /// Function `name`, in any case.
    fn find(&self, name: &[u8]) -> Option<&FunctionInfo> {
        let name = String::from_utf8_lossy(name).to_lowercase();
        let lib = self.libraries.get(self.index.get(&name)?)?;
        lib.functions.iter().find(|f| f.name.to_lowercase() == name)
    }

    /// The flags of function `name`, if there is one.
    pub fn flags(&self, name: &[u8]) -> Option<&[&'static str]> {
        Some(&self.find(name)?.flags)
    }

    /// FCALL: runs function `name` with `keys` and `args`, its commands through `host`; writes its reply
    /// (or its error, as Redis words it) to `out`. False when there is no such function.
    pub fn call(
        &mut self,
        name: &[u8],
        keys: &[Bytes],
        args: &[Bytes],
        host: &mut dyn Host,
        out: &mut Reply,
    ) -> bool {
        let Some(f) = self.find(name) else {
            return false;
        };
        let name = f.name.clone();
        let lua = &self.lua;
        let Ok(callback) = lua.registry_value::<Function>(&f.callback) else {
            return false;
        };
        self.running.start(true);
        let outcome = run_with_host(lua, host, |lua| {
            let run_with = &self.run_with;
            let (keys, args) = string_arrays(lua, keys, args)?;
            let r: MultiValue = sandbox::limited(lua, || run_with.call((callback, keys, args)))?;
            let mut r = r.into_iter();
            let ok = matches!(r.next(), Some(Value::Boolean(true)));
            let v = r.next().unwrap_or(Value::Nil);
            Ok(if ok { Ok(v) } else { Err(v) })
        });
        self.running.stop();
        match outcome {
            Ok(Ok(v)) => {
                let resp3 = lua.app_data_ref::<RunState>().is_some_and(|r| r.resp3);
                if let Err(e) = convert::lua_to_reply(out, &v, resp3, &self.next) {
                    out.error(&format!("ERR {e}"));
                }
            }
            Ok(Err(err)) => write_script_error(out, &err, &name),
            Err(e) => out.error(&format!("ERR Error running function {name}, {e}")),
        }
        if let Some(mut run) = lua.app_data_mut::<RunState>() {
            *run = RunState::default();
        }
        true
    }

    /// FUNCTION DUMP's payload.
    pub fn dump(&self) -> Vec<u8> {
        dump::payload(self.libraries.values().map(|l| &l.code[..]))
    }

    /// FUNCTION RESTORE: the libraries of `payload` added as `policy` says (`FLUSH` first, `APPEND`
    /// refusing a library that exists, `REPLACE` replacing it); all or nothing.
    pub fn restore(&mut self, payload: &[u8], policy: &str) -> Result<(), String> {
        let codes = dump::libraries(payload)?;
        let before: Vec<Vec<u8>> = self.libraries.values().map(|l| l.code.clone()).collect();
        if policy == "flush" {
            self.flush();
        }
        let mut result = Ok(());
        let replace = policy == "replace";
        for code in &codes {
            let loaded = match metadata(code) {
                // Redis words RESTORE's collision without LOAD's quotes around the name.
                Ok((name, _)) if !replace && self.libraries.contains_key(&name) => {
                    Err(format!("ERR Library {name} already exists"))
                }
                _ => self.load(code, replace).map(drop),
            };
            if let Err(e) = loaded {
                result = Err(e);
                break;
            }
        }
        if result.is_err() {
            // Put back what was there.
            self.flush();
            for code in &before {
                let _ = self.load(code, false);
            }
        }
        result
    }
}

/// The message of a library's load error: its `err` field, or its text.
fn error_message(err: &Value) -> String {
    match err {
        Value::Table(t) => match t.raw_get::<Value>("err") {
            Ok(Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            _ => String::new(),
        },
        Value::String(s) => format!("ERR {}", String::from_utf8_lossy(&s.as_bytes())),
        _ => String::new(),
    }
}
