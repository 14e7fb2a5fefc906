//! The commands through the `redis` crate, as an application would use them: replies, errors and TTL
//! behaviour as Redis 7 documents them; RESP3 after HELLO 3; AUTH; CLIENT; CONFIG; INFO; COMMAND.

mod common;

use common::{bulk, err, simple, Raw};
use hopless_server::codec::Frame;
use redis::{Commands, RedisResult};

#[test]
fn strings_round_trip_through_a_client_library() {
    let server = common::start();
    let mut c = common::client(server.addr());
    let _: () = c.set("k", "v").unwrap();
    assert_eq!(c.get::<_, String>("k").unwrap(), "v");
    assert_eq!(c.get::<_, Option<String>>("missing").unwrap(), None);
    let _: () = c.set_ex("t", "v", 100).unwrap();
    assert_eq!(c.ttl::<_, i64>("t").unwrap(), 100);
    assert!(c.pttl::<_, i64>("t").unwrap() > 99_000);
    assert_eq!(c.incr::<_, _, i64>("n", 5).unwrap(), 5);
    assert_eq!(c.decr::<_, _, i64>("n", 2).unwrap(), 3);
    let f: f64 = redis::cmd("INCRBYFLOAT").arg("f").arg(1.5).query(&mut c).unwrap();
    assert_eq!(f, 1.5);
    assert_eq!(c.append::<_, _, i64>("k", "w").unwrap(), 2);
    assert_eq!(c.strlen::<_, i64>("k").unwrap(), 2);
    let _: () = c.mset(&[("a", "1"), ("b", "2")]).unwrap();
    assert_eq!(
        c.mget::<_, Vec<Option<String>>>(&["a", "b", "c"]).unwrap(),
        vec![Some("1".into()), Some("2".into()), None]
    );
    assert_eq!(c.getrange::<_, String>("k", 0, 0).unwrap(), "v");
    assert_eq!(c.setrange::<_, _, i64>("k", 1, "XY").unwrap(), 3);
    assert_eq!(c.get::<_, String>("k").unwrap(), "vXY");
    assert_eq!(c.del::<_, i64>(&["a", "b", "zz"]).unwrap(), 2);
    let e: RedisResult<i64> = c.incr("k", 1);
    assert_eq!(
        e.unwrap_err().detail(),
        Some("value is not an integer or out of range")
    );
    // Binary-safe keys and values.
    let bin: Vec<u8> = (0..=255).collect();
    let _: () = c.set(&bin[..], &bin[..]).unwrap();
    assert_eq!(c.get::<_, Vec<u8>>(&bin[..]).unwrap(), bin);
}

#[test]
fn ttls_expire_keys() {
    let server = common::start();
    let mut c = common::client(server.addr());
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .arg("PX")
        .arg(30)
        .query(&mut c)
        .unwrap();
    assert!(c.exists::<_, bool>("k").unwrap());
    std::thread::sleep(std::time::Duration::from_millis(80));
    assert!(!c.exists::<_, bool>("k").unwrap());
    assert_eq!(c.ttl::<_, i64>("k").unwrap(), -2);
    let _: () = c.set("p", "v").unwrap();
    assert_eq!(c.ttl::<_, i64>("p").unwrap(), -1);
    assert!(c.expire::<_, bool>("p", 10).unwrap());
    assert!(c.persist::<_, bool>("p").unwrap());
    assert_eq!(c.ttl::<_, i64>("p").unwrap(), -1);
}

#[test]
fn keyspace_commands() {
    let server = common::start();
    let mut c = common::client(server.addr());
    for i in 0..50 {
        let _: () = c.set(format!("user:{i}"), i).unwrap();
    }
    let _: () = c.set("other", 1).unwrap();
    let mut keys: Vec<String> = c.keys("user:1*").unwrap();
    keys.sort();
    assert_eq!(keys.len(), 11);
    // SCAN visits every key.
    let mut seen = std::collections::HashSet::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg("user:*")
            .arg("COUNT")
            .arg(7)
            .query(&mut c)
            .unwrap();
        seen.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    assert_eq!(seen.len(), 50);
    let (_, none): (u64, Vec<String>) = redis::cmd("SCAN")
        .arg(0)
        .arg("TYPE")
        .arg("hash")
        .arg("COUNT")
        .arg(1000)
        .query(&mut c)
        .unwrap();
    assert!(none.is_empty());
    let k: String = redis::cmd("RANDOMKEY").query(&mut c).unwrap();
    assert!(k.starts_with("user:") || k == "other");
    assert_eq!(redis::cmd("DBSIZE").query::<i64>(&mut c).unwrap(), 51);
    let t: String = redis::cmd("TYPE").arg("other").query(&mut c).unwrap();
    assert_eq!(t, "string");
    let _: () = c.rename("other", "renamed").unwrap();
    assert!(!c.rename_nx::<_, _, bool>("user:1", "renamed").unwrap());
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    assert_eq!(redis::cmd("DBSIZE").query::<i64>(&mut c).unwrap(), 0);
    assert_eq!(
        redis::cmd("RANDOMKEY").query::<Option<String>>(&mut c).unwrap(),
        None
    );
}

#[test]
fn keys_patterns_cannot_take_exponential_time() {
    let server = common::start();
    let mut c = common::client(server.addr());
    let _: () = c.set("a".repeat(3000), 1).unwrap();
    let pattern = format!("{}b", "*a".repeat(200));
    let keys: Vec<String> = c.keys(&pattern).unwrap();
    assert!(keys.is_empty());
}

#[test]
fn resp3_after_hello_3() {
    let server = common::start();
    let mut r = Raw::connect(server.addr());
    r.cmd(&[b"HELLO", b"3"]);
    let Frame::Map(m) = r.read() else {
        panic!("HELLO 3 replies with a map")
    };
    assert!(m.contains(&(bulk("proto"), Frame::Integer(3))));
    r.cmd(&[b"GET", b"nokey"]);
    assert_eq!(r.read(), Frame::Null);
    r.cmd(&[b"CONFIG", b"GET", b"maxmemory"]);
    assert_eq!(r.read(), Frame::Map(vec![(bulk("maxmemory"), bulk("0"))]));
    r.cmd(&[b"INFO", b"server"]);
    assert!(matches!(r.read(), Frame::Verbatim(f, _) if f == "txt"));
    r.cmd(&[b"HELLO", b"2"]);
    assert!(matches!(r.read(), Frame::Array(_)));
    r.cmd(&[b"GET", b"nokey"]);
    assert_eq!(r.read(), Frame::Null);
}

#[test]
fn requirepass_gates_commands_with_noauth_and_wrongpass() {
    let server = common::start_with(|o| o.requirepass = Some("secret".into()));
    let mut r = Raw::connect(server.addr());
    r.cmd(&[b"GET", b"k"]);
    assert_eq!(r.read(), err("NOAUTH Authentication required."));
    r.cmd(&[b"AUTH", b"wrong"]);
    assert_eq!(
        r.read(),
        err("WRONGPASS invalid username-password pair or user is disabled.")
    );
    r.cmd(&[b"HELLO", b"3"]);
    assert!(matches!(r.read(), Frame::Error(e) if e.starts_with("NOAUTH HELLO must be called")));
    r.cmd(&[b"AUTH", b"secret"]);
    assert_eq!(r.read(), simple("OK"));
    r.cmd(&[b"SET", b"k", b"v"]);
    assert_eq!(r.read(), simple("OK"));
    // HELLO with AUTH authenticates in one go; the redis crate's password URL works too.
    let mut r2 = Raw::connect(server.addr());
    r2.cmd(&[b"HELLO", b"3", b"AUTH", b"default", b"secret"]);
    assert!(matches!(r2.read(), Frame::Map(_)));
    let c = redis::Client::open(format!("redis://:secret@{}/", server.addr())).unwrap();
    let mut c = c.get_connection().unwrap();
    assert_eq!(c.get::<_, String>("k").unwrap(), "v");
    // Unauthenticated clients may not send big requests.
    let mut r3 = Raw::connect(server.addr());
    r3.send(b"*20\r\n");
    assert_eq!(
        r3.read(),
        err("ERR Protocol error: unauthenticated multibulk length")
    );
}

#[test]
fn client_commands() {
    let server = common::start();
    let mut a = Raw::connect(server.addr());
    let mut b = Raw::connect(server.addr());
    a.cmd(&[b"CLIENT", b"SETNAME", b"alpha"]).read();
    a.cmd(&[b"CLIENT", b"ID"]);
    let Frame::Integer(id_a) = a.read() else { panic!() };
    b.cmd(&[b"CLIENT", b"LIST"]);
    let list = b.read();
    let text = String::from_utf8_lossy(list.as_bytes().unwrap()).into_owned();
    assert!(
        text.contains(&format!("id={id_a} ")) && text.contains("name=alpha"),
        "{text}"
    );
    b.cmd(&[b"CLIENT", b"INFO"]);
    assert!(String::from_utf8_lossy(b.read().as_bytes().unwrap()).contains("cmd=client|info "));
    b.cmd(&[b"CLIENT", b"KILL", b"ID", id_a.to_string().as_bytes()]);
    assert_eq!(b.read(), Frame::Integer(1));
    assert!(a.try_read().is_none(), "the killed client is closed");
    b.cmd(&[b"PING"]);
    assert_eq!(b.read(), simple("PONG"));
}

#[test]
fn server_commands_answer_what_tools_ask() {
    let server = common::start();
    let mut c = common::client(server.addr());
    let _: () = c.set("k", "v").unwrap();
    let info: String = redis::cmd("INFO").query(&mut c).unwrap();
    for field in [
        "redis_version:",
        "used_memory:",
        "used_memory_rss:",
        "mem_fragmentation_ratio:",
        "connected_clients:",
        "db0:keys=1",
        "total_commands_processed:",
    ] {
        assert!(info.contains(field), "INFO lacks {field}");
    }
    let all: String = redis::cmd("INFO").arg("all").query(&mut c).unwrap();
    assert!(all.contains("cmdstat_set:calls=1,"), "{all}");
    let count: i64 = redis::cmd("COMMAND").arg("COUNT").query(&mut c).unwrap();
    assert!(count > 50);
    let info: redis::Value = redis::cmd("COMMAND")
        .arg("INFO")
        .arg("get")
        .query(&mut c)
        .unwrap();
    assert!(matches!(info, redis::Value::Array(ref v) if v.len() == 1));
    let docs: redis::Value = redis::cmd("COMMAND")
        .arg("DOCS")
        .arg("set")
        .query(&mut c)
        .unwrap();
    assert!(matches!(docs, redis::Value::Array(ref v) if v.len() == 2));
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("1mb")
        .query(&mut c)
        .unwrap();
    assert_eq!(server.store().maxmemory(), 1 << 20);
    let usage: i64 = redis::cmd("MEMORY").arg("USAGE").arg("k").query(&mut c).unwrap();
    assert!(usage > 0);
    let stats: redis::Value = redis::cmd("MEMORY").arg("STATS").query(&mut c).unwrap();
    assert!(matches!(stats, redis::Value::Array(_)));
    let enc: String = redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg("k")
        .query(&mut c)
        .unwrap();
    assert_eq!(enc, "embstr");
    let _: () = redis::cmd("DEBUG").arg("SLEEP").arg(0).query(&mut c).unwrap();
}

#[test]
fn maxmemory_noeviction_refuses_writes_and_lru_evicts() {
    let server = common::start_with(|o| o.maxmemory = 256 * 1024);
    let mut c = common::client(server.addr());
    let big = "x".repeat(1000);
    let mut refused = None;
    for i in 0..1000 {
        if let Err(e) = c.set::<_, _, ()>(format!("k{i}"), &big) {
            refused = Some(e);
            break;
        }
    }
    let e = refused.expect("a write is refused at maxmemory");
    assert_eq!(e.code(), Some("OOM"));
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("allkeys-lru")
        .query(&mut c)
        .unwrap();
    for i in 0..1000 {
        let _: () = c.set(format!("k{i}"), &big).unwrap();
    }
    assert!(server.store().stats().evicted > 0);
}

#[test]
fn quit_replies_then_closes_and_shutdown_stops_the_server() {
    let server = common::start();
    let mut r = Raw::connect(server.addr());
    r.cmd(&[b"QUIT"]);
    assert_eq!(r.read(), simple("OK"));
    assert!(r.try_read().is_none());
    let addr = server.addr();
    let mut r = Raw::connect(addr);
    r.cmd(&[b"SHUTDOWN", b"NOSAVE"]);
    assert!(r.try_read().is_none());
    server.wait().unwrap();
    assert!(std::net::TcpStream::connect(addr).is_err());
}

#[test]
fn inline_commands_work_as_typed_into_telnet() {
    let server = common::start();
    let mut r = Raw::connect(server.addr());
    r.send(b"SET greeting \"hello world\"\r\nGET greeting\r\n\r\nPING\n");
    assert_eq!(r.read(), simple("OK"));
    assert_eq!(r.read(), bulk("hello world"));
    assert_eq!(r.read(), simple("PONG"));
}

#[test]
fn protected_mode_refuses_public_bind_without_password() {
    let e = hopless_server::Server::start(common::options().tap_bind("0.0.0.0"))
        .err()
        .expect("refused");
    assert!(e.to_string().contains("protected mode"), "{e}");
    let s = hopless_server::Server::start(hopless_server::ServeOptions {
        requirepass: Some("p".into()),
        ..common::options().tap_bind("0.0.0.0")
    });
    assert!(s.is_ok());
}

trait TapBind {
    fn tap_bind(self, b: &str) -> Self;
}

impl TapBind for hopless_server::ServeOptions {
    fn tap_bind(mut self, b: &str) -> Self {
        self.bind = vec![b.to_string()];
        self
    }
}

/// DEBUG OBJECT, as Redis's own test units read it: the encoding, refcount and a string's length in
/// Redis's one-line status reply; a missing key is Redis's error.
#[test]
fn debug_object_describes_a_value_as_redis_does() {
    let server = common::start();
    let mut c = common::client(server.addr());
    let _: () = c.set("n", "20000").unwrap();
    let line: String = redis::cmd("DEBUG").arg("OBJECT").arg("n").query(&mut c).unwrap();
    let words: Vec<&str> = line.split(' ').collect();
    assert_eq!(words.len(), 7, "{line}");
    assert!(words[0] == "Value" && words[1].starts_with("at:0x"), "{line}");
    assert_eq!(
        words[2..],
        [
            "refcount:1",
            "encoding:int",
            "serializedlength:5",
            "lru:0",
            "lru_seconds_idle:0"
        ]
    );
    let _: () = c.hset("h", "f", "v").unwrap();
    let line: String = redis::cmd("DEBUG").arg("OBJECT").arg("h").query(&mut c).unwrap();
    assert!(line.contains(" encoding:listpack "), "{line}");
    let big: Vec<(String, String)> = (0..1000).map(|i| (format!("f{i}"), "v".into())).collect();
    let _: () = c.hset_multiple("h", &big).unwrap();
    let line: String = redis::cmd("DEBUG").arg("OBJECT").arg("h").query(&mut c).unwrap();
    assert!(line.contains(" encoding:hashtable "), "{line}");
    let e: RedisResult<String> = redis::cmd("DEBUG").arg("OBJECT").arg("missing").query(&mut c);
    assert_eq!(e.unwrap_err().detail(), Some("no such key"));
}
