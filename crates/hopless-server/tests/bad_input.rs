//! Malformed and hostile input: each case gets Redis's protocol error or a closed connection, never a
//! crash; and in each, a client connected before and one connected after still work and no key is lost.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{err, simple, Raw};
use hopless_server::codec::Frame;

const KEYS: usize = 200;

/// Runs `bad` on its own connection between a bystander's commands, then checks the data.
fn case(server: &hopless_server::Server, bad: impl FnOnce(&mut Raw)) {
    let addr = server.addr();
    let mut bystander = common::client(addr);
    let _: () = redis::cmd("SET")
        .arg("bystander")
        .arg("here")
        .query(&mut bystander)
        .unwrap();
    let mut r = Raw::connect(addr);
    bad(&mut r);
    let v: String = redis::cmd("GET").arg("bystander").query(&mut bystander).unwrap();
    assert_eq!(v, "here");
    common::check_intact(addr, KEYS);
}

fn server() -> hopless_server::Server {
    let s = common::start();
    common::fill(s.addr(), KEYS);
    s
}

fn protocol_error_then_close(bytes: &[u8], expect: &str) {
    let s = server();
    case(&s, |r| {
        r.send(bytes);
        assert_eq!(r.read(), err(expect), "{:?}", String::from_utf8_lossy(bytes));
        assert!(r.try_read().is_none(), "closed after a protocol error");
    });
}

#[test]
fn wrong_type_byte() {
    protocol_error_then_close(b"*1\r\n+PING\r\n", "ERR Protocol error: expected '$', got '+'");
    protocol_error_then_close(
        b"*2\r\n$3\r\nGET\r\n:1\r\n",
        "ERR Protocol error: expected '$', got ':'",
    );
}

#[test]
fn negative_and_huge_lengths() {
    protocol_error_then_close(b"*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length");
    protocol_error_then_close(
        b"*1\r\n$999999999999\r\n",
        "ERR Protocol error: invalid bulk length",
    );
    protocol_error_then_close(b"*1\r\n$536870913\r\n", "ERR Protocol error: invalid bulk length");
    protocol_error_then_close(b"*3000000000\r\n", "ERR Protocol error: invalid multibulk length");
    protocol_error_then_close(b"*x\r\n", "ERR Protocol error: invalid multibulk length");
    // A negative or zero count is an empty request, skipped as Redis skips it.
    let s = server();
    case(&s, |r| {
        r.send(b"*-5\r\n*0\r\nPING\r\n");
        assert_eq!(r.read(), simple("PONG"));
    });
}

#[test]
fn missing_crlf() {
    // After bulk data, Redis skips two bytes without looking: so does hopless.
    let s = server();
    case(&s, |r| {
        r.send(b"*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n");
        assert_eq!(r.read(), simple("PONG"));
        assert_eq!(r.read(), simple("PONG"));
    });
    // A count line that never ends: too big past 64 KiB.
    let mut b = b"*1\r\n$".to_vec();
    b.extend(std::iter::repeat_n(b'1', 70_000));
    protocol_error_then_close(&b, "ERR Protocol error: too big bulk count string");
    let mut b = vec![b'x'; 70_000];
    b.push(b' ');
    protocol_error_then_close(&b, "ERR Protocol error: too big inline request");
    protocol_error_then_close(
        b"SET k \"unbalanced\r\n",
        "ERR Protocol error: unbalanced quotes in request",
    );
}

#[test]
fn truncated_frames() {
    let s = server();
    // Hung up mid-frame.
    case(&s, |r| {
        r.send(b"*3\r\n$3\r\nSET\r\n$2\r\nk0\r\n$100\r\nabc");
        r.sock.shutdown(std::net::Shutdown::Both).unwrap();
    });
    // A frame sent one byte at a time arrives whole.
    case(&s, |r| {
        for b in b"*3\r\n$3\r\nSET\r\n$4\r\nslow\r\n$2\r\nok\r\n" {
            r.sock.write_all(&[*b]).unwrap();
            r.sock.flush().unwrap();
        }
        assert_eq!(r.read(), simple("OK"));
    });
}

#[test]
fn a_million_element_array() {
    let s = server();
    case(&s, |r| {
        // A header that announces a million arguments, then hangs up.
        r.send(b"*1000000\r\n$3\r\nDEL\r\n");
        r.sock.shutdown(std::net::Shutdown::Both).unwrap();
    });
    case(&s, |r| {
        // A real million-argument request: EXISTS of a million keys that do not exist (nor are k*).
        let mut b = b"*1000001\r\n$6\r\nEXISTS\r\n".to_vec();
        for i in 0..1_000_000u32 {
            let k = format!("x{i}");
            b.extend_from_slice(format!("${}\r\n{k}\r\n", k.len()).as_bytes());
        }
        r.send(&b);
        assert_eq!(r.read(), Frame::Integer(0));
    });
}

#[test]
fn a_100_mb_bulk_string() {
    let s = server();
    case(&s, |r| {
        let n = 100 << 20;
        let mut b = format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${n}\r\n").into_bytes();
        b.resize(b.len() + n, b'z');
        b.extend_from_slice(b"\r\n");
        r.send(&b);
        assert_eq!(r.read(), simple("OK"));
        r.cmd(&[b"STRLEN", b"big"]);
        assert_eq!(r.read(), Frame::Integer(n as i64));
        r.cmd(&[b"DEL", b"big"]);
        assert_eq!(r.read(), Frame::Integer(1));
    });
}

#[test]
fn garbage_bytes() {
    let s = server();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..20 {
        case(&s, |r| {
            let mut b = Vec::new();
            for _ in 0..4096 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.push(x as u8);
            }
            b.extend_from_slice(b"\r\n");
            let _ = r.sock.write_all(&b);
            let _ = r.sock.shutdown(std::net::Shutdown::Write);
            r.closed();
        });
    }
    // Keys still intact after all of it (checked in `case`); none of the garbage wrote k*.
}

#[test]
fn query_buffer_limit_closes_that_client() {
    let s = common::start_with(|o| o.client_query_buffer_limit = 1 << 20);
    common::fill(s.addr(), KEYS);
    case(&s, |r| {
        let mut b = b"*3\r\n$3\r\nSET\r\n$1\r\nq\r\n$4000000\r\n".to_vec();
        b.resize(b.len() + (3 << 20), b'q');
        let _ = r.sock.write_all(&b);
        assert!(r.try_read().is_none(), "closed without a reply");
    });
}

/// The limit set at run time (CONFIG SET) applies to a connection opened before it, and the idle
/// timeout too.
#[test]
fn limits_set_at_run_time_apply_to_open_connections() {
    let s = common::start();
    let mut big = Raw::connect(s.addr());
    big.cmd(&[b"PING"]).read();
    let mut idle = Raw::connect(s.addr());
    idle.cmd(&[b"PING"]).read();
    let mut admin = Raw::connect(s.addr());
    admin.cmd(&[b"CONFIG", b"SET", b"client-query-buffer-limit", b"1mb"]);
    assert_eq!(admin.read(), simple("OK"));
    admin.cmd(&[b"CONFIG", b"SET", b"timeout", b"1"]);
    assert_eq!(admin.read(), simple("OK"));
    let mut b = b"*3\r\n$3\r\nSET\r\n$1\r\nq\r\n$4000000\r\n".to_vec();
    b.resize(b.len() + (3 << 20), b'q');
    let _ = big.sock.write_all(&b);
    assert_closed(&mut big);
    // `idle` was waiting in a read when the timeout was set: it takes it from its next command on.
    idle.cmd(&[b"PING"]).read();
    std::thread::sleep(Duration::from_millis(2500));
    let _ = idle.sock.write_all(b"PING\r\n");
    assert_closed(&mut idle);
}

/// The server closed `r` without a reply (an end of stream or a reset, not a read that timed out).
fn assert_closed(r: &mut Raw) {
    use std::io::Read;
    let mut one = [0u8; 1];
    let got = r.sock.read(&mut one);
    let reset = matches!(&got, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset);
    assert!(matches!(got, Ok(0)) || reset, "{got:?}");
}

#[test]
fn maxclients_refuses_the_extra_client() {
    let s = common::start_with(|o| o.maxclients = 3);
    common::fill(s.addr(), KEYS);
    let mut a = Raw::connect(s.addr());
    let mut b = Raw::connect(s.addr());
    a.cmd(&[b"PING"]).read();
    b.cmd(&[b"PING"]).read();
    let mut c = Raw::connect(s.addr());
    c.cmd(&[b"PING"]).read();
    let mut d = Raw::connect(s.addr());
    assert_eq!(d.read(), err("ERR max number of clients reached"));
    drop(c);
    // Once one leaves, there is room again (the server notices the close shortly).
    let mut ok = false;
    for _ in 0..200 {
        let mut e = Raw::connect(s.addr());
        if e.cmd(&[b"PING"]).try_read() == Some(simple("PONG")) {
            ok = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(ok);
    a.cmd(&[b"GET", b"k1"]);
    assert_eq!(a.read(), common::bulk("v1"));
}

#[test]
fn idle_clients_are_closed_after_the_timeout() {
    let s = common::start_with(|o| o.timeout = 1);
    let mut r = Raw::connect(s.addr());
    r.cmd(&[b"PING"]).read();
    // No timing asserted: the connection is closed at some point after a second idle.
    assert!(r.try_read().is_none());
}

/// The query buffer of CLIENT LIST's line (`qbuf-free`): the room left in this connection's buffer.
fn qbuf_free(c: &mut Raw) -> usize {
    let Frame::Bulk(line) = c.cmd(&[b"CLIENT", b"LIST"]).read() else {
        panic!("CLIENT LIST is a bulk string");
    };
    let line = String::from_utf8_lossy(&line).into_owned();
    let field = line.split(' ').find_map(|f| f.strip_prefix("qbuf-free="));
    field.and_then(|n| n.parse().ok()).expect("a qbuf-free field")
}

/// A client that sent one big request, or read one big reply, and then idles does not keep that
/// memory: its buffers go back to their first size (a thousand such clients would otherwise hold a
/// gigabyte).
#[test]
fn a_big_request_leaves_no_big_buffer_behind() {
    let server = server();
    let mut c = Raw::connect(server.addr());
    let big = vec![b'x'; 4 << 20];
    assert_eq!(c.cmd(&[b"SET", b"big", &big]).read(), simple("OK"));
    assert!(qbuf_free(&mut c) < 256 << 10, "after a 4 MiB request");
    assert_eq!(c.cmd(&[b"GET", b"big"]).read(), Frame::Bulk(big.into()));
    assert!(qbuf_free(&mut c) < 256 << 10, "after a 4 MiB reply");
}
