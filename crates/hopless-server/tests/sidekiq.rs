//! A second real client, in another language: Debian's `ruby-sidekiq` (Sidekiq 6) against `hopless
//! serve`, as a Rails application runs it. A job enqueued to run now and one scheduled for a second
//! later both run, the scheduled one moved to its queue by Sidekiq's poller, which does it with a Lua
//! script (SCRIPT LOAD, then EVALSHA of its `zpopbyscore`). Skipped without `ruby` and `sidekiq` (failed
//! under `CI=true`).

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Raw;
use hopless_server::codec::Frame;

const WORKER: &str = r#"
require 'sidekiq'
url = "redis://127.0.0.1:#{ENV.fetch('HOPLESS_PORT')}/0"
Sidekiq.configure_server { |c| c.redis = { url: url } }
Sidekiq.configure_client { |c| c.redis = { url: url } }
# Poll the scheduled set every second or so (the default waits 5-15 s first).
Sidekiq.options[:poll_interval_average] = 1
class RecordJob
  include Sidekiq::Worker
  def perform(name)
    Sidekiq.redis { |r| r.rpush('hopless:done', name) }
  end
end
"#;

const ENQUEUE: &str = r#"
require_relative 'worker'
RecordJob.perform_async('now')
RecordJob.perform_in(1, 'later')
puts 'enqueued'
"#;

#[test]
fn sidekiq_runs_a_job_now_and_a_scheduled_one() {
    if !common::require_tool("ruby") || !common::require_tool("sidekiq") {
        return;
    }
    let server = common::start_with(|o| o.threads = 2);
    let port = server.addr().port().to_string();
    let dir = std::env::temp_dir().join(format!("hopless-sidekiq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("worker.rb"), WORKER).unwrap();
    std::fs::write(dir.join("enqueue.rb"), ENQUEUE).unwrap();
    let out = Command::new("ruby")
        .arg("enqueue.rb")
        .current_dir(&dir)
        .env("HOPLESS_PORT", &port)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "enqueue: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut sidekiq = Command::new("sidekiq")
        .args(["-r", "./worker.rb", "-c", "2"])
        .current_dir(&dir)
        .env("HOPLESS_PORT", &port)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut c = Raw::connect(server.addr());
    let start = Instant::now();
    let done = loop {
        let done = c.cmd(&[b"LRANGE", b"hopless:done", b"0", b"-1"]).read();
        if done == Frame::Array(vec![common::bulk("now"), common::bulk("later")])
            || start.elapsed() > Duration::from_secs(30)
        {
            break done;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = sidekiq.kill();
    let _ = sidekiq.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        done,
        Frame::Array(vec![common::bulk("now"), common::bulk("later")])
    );
    // The scheduled job went through Sidekiq's script.
    let Frame::Bulk(stats) = c.cmd(&[b"INFO", b"commandstats"]).read() else {
        panic!("INFO answers a bulk string")
    };
    assert!(String::from_utf8_lossy(&stats).contains("cmdstat_evalsha:calls="));
}
