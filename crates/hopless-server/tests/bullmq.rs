//! A job queue on Node: BullMQ (npm `bullmq`, whose every queue operation is a Lua script and whose
//! events go through a stream: XADD from the scripts, XREAD BLOCK in `QueueEvents`) against `hopless
//! serve`, as an application runs it. Fifty jobs, one that fails and is retried with a backoff, a
//! delayed one, a prioritised one, a bulk add and a parent with a child (a flow), all processed by a
//! worker of concurrency 5; a job's result awaited through the event stream; then the queue's counts.
//! Skipped without `node` or the `bullmq` package (failed under `CI=true`, whose run installs both into
//! `target/node`; `HOPLESS_NODE_MODULES` points elsewhere).

mod common;

use std::path::PathBuf;
use std::process::Command;

const SCRIPT: &str = r#"
const { Queue, Worker, QueueEvents, FlowProducer } = require('bullmq');
const connection = { host: '127.0.0.1', port: Number(process.env.HOPLESS_PORT), maxRetriesPerRequest: null };
(async () => {
  const q = new Queue('jobs', { connection });
  const events = new QueueEvents('jobs', { connection });
  await events.waitUntilReady();
  let completedEvents = 0;
  events.on('completed', () => { completedEvents++; });
  const done = [];
  const failed = [];
  const w = new Worker('jobs', async job => {
    if (job.data.fail) throw new Error('boom');
    if (job.data.n % 7 === 0) await job.updateProgress(50);
    return job.data.n * 2;
  }, { connection, concurrency: 5 });
  w.on('completed', (job, r) => done.push(r));
  w.on('failed', job => failed.push(job.id));
  for (let i = 0; i < 50; i++) await q.add('j', { n: i });
  await q.add('bad', { fail: true }, { attempts: 2, backoff: { type: 'fixed', delay: 50 } });
  await q.add('later', { n: 1000 }, { delay: 300 });
  await q.add('prio', { n: 2000 }, { priority: 3 });
  await q.addBulk([{ name: 'b1', data: { n: 3000 } }, { name: 'b2', data: { n: 3001 } }]);
  const flow = new FlowProducer({ connection });
  await flow.add({ name: 'parent', queueName: 'jobs', data: { n: 5000 },
                   children: [{ name: 'c', queueName: 'jobs', data: { n: 5001 } }] });
  const job = await q.add('waited', { n: 7 });
  const waited = await job.waitUntilFinished(events, 10000);
  const deadline = Date.now() + 10000;
  while (Date.now() < deadline && (done.length < 57 || completedEvents < 57)) {
    await new Promise(res => setTimeout(res, 50));
  }
  const counts = await q.getJobCounts();
  console.log(JSON.stringify({ done: done.length, failed, waited, completedEvents, counts }));
  await w.close(); await events.close(); await q.close(); await flow.close();
  process.exit(0);
})().catch(e => { console.error('ERROR', e); process.exit(1); });
"#;

/// Where `bullmq` is installed, if it is.
fn node_modules() -> Option<PathBuf> {
    let dir = match std::env::var_os("HOPLESS_NODE_MODULES") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/node/node_modules"),
    };
    if dir.join("bullmq").is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the bullmq package is not in {}, and CI=true: `npm install --prefix target/node bullmq` \
         rather than skip the test",
        dir.display()
    );
    eprintln!("bullmq not installed in {}: skipping", dir.display());
    None
}

#[test]
fn bullmq_runs_jobs_retries_delays_flows_and_its_events() {
    if !common::require_tool("node") {
        return;
    }
    let Some(modules) = node_modules() else {
        return;
    };
    let server = common::start_with(|o| o.threads = 2);
    let out = Command::new("node")
        .args(["-e", SCRIPT])
        .env("NODE_PATH", &modules)
        .env("HOPLESS_PORT", server.addr().port().to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What Redis 7.0.15 gives for the same script: 57 jobs completed (50, the delayed, the prioritised,
    // the bulk two, the flow's two, the awaited one), the bad one failed twice (two attempts).
    assert_eq!(
        stdout.trim(),
        r#"{"done":57,"failed":["51","51"],"waited":14,"completedEvents":57,"counts":{"active":0,"completed":57,"delayed":0,"failed":1,"paused":0,"prioritized":0,"waiting":0,"waiting-children":0}}"#
    );
}
