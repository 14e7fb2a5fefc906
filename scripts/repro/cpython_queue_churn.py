#!/usr/bin/env python3
"""A CPython queue workload, scaled down: two producer threads make bytes of 0.5-20 KiB that the
main thread consumes from a queue, while three more threads churn objects of 0.6-70 KiB.

Count what the allocator costs the process, e.g. with hopless and mimalloc preloaded in turn:
  LD_PRELOAD=target/release/libhopless.so strace -f -c -e trace=madvise python3 scripts/repro/cpython_queue_churn.py
  LD_PRELOAD=target/release/libhopless.so /usr/bin/time -f "%e s %R faults %w switches %M KB" python3 scripts/repro/cpython_queue_churn.py
Argument: the number of blocks through the queue (default 40000).
"""
import queue, random, sys, threading

N = int(sys.argv[1]) if len(sys.argv) > 1 else 40000
q = queue.Queue(maxsize=256)
stop = threading.Event()

def producer(seed):
    r = random.Random(seed)
    for _ in range(N // 2):
        q.put(bytes(r.randint(512, 20 * 1024)))

def churner(seed):
    r = random.Random(seed)
    keep = [bytearray(r.randint(600, 70 * 1024)) for _ in range(64)]
    while not stop.is_set():
        keep[r.randrange(64)] = bytearray(r.randint(600, 70 * 1024))

ps = [threading.Thread(target=producer, args=(i,)) for i in range(2)]
cs = [threading.Thread(target=churner, args=(10 + i,)) for i in range(3)]
for t in ps + cs:
    t.start()
total = 0
for _ in range(N):
    total += len(q.get())
stop.set()
for t in ps + cs:
    t.join()
print(total)
