# An allocation-heavy Python workload with deterministic output: dicts, lists, strings, objects, threads.
import hashlib
import json
import threading

h = hashlib.sha256()

d = {}
for i in range(300_000):
    d[f"key-{i}"] = [i, str(i) * (i % 7), {"n": i}]
for i in range(0, 300_000, 3):
    del d[f"key-{i}"]
h.update(str(len(d)).encode())

words = [("w%d" % (i * 7919 % 100_003)) * (1 + i % 5) for i in range(200_000)]
words.sort()
h.update("".join(words[::1000]).encode())

blob = json.dumps([{"id": i, "tags": ["a" * (i % 13)] * 3} for i in range(50_000)])
h.update(hashlib.sha256(blob.encode()).digest())
back = json.loads(blob)
h.update(str(sum(len(x["tags"][0]) for x in back)).encode())

results = [None] * 8


def work(t):
    acc = []
    for i in range(30_000):
        acc.append(bytes((t + i) % 256 for _ in range(i % 40)))
    results[t] = sum(len(x) for x in acc)


threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
h.update(str(results).encode())

print(len(d), len(words), len(back), results[0])
print(h.hexdigest())
