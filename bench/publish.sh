#!/bin/sh
# A request through a published port (`chock run --background --publish`)
# against the same server reached directly on the host, in one run: the
# latency of a small GET (a new connection each, as Python's http.server
# speaks HTTP/1.0) and the throughput of a 100 MB body. Figures in
# bench/README.md ("A published port").
set -eu
chock=$(realpath "${CHOCK:-build/bin/chock}")
requests=${REQUESTS:-300}
work=$(mktemp -d /tmp/chock-publish-bench.XXXXXX)
direct_pid=""
task=""
host_task=""
cleanup() {
  [ -n "$task" ] && XDG_DATA_HOME="$work/data" "$chock" tasks cancel "$task" >/dev/null 2>&1 || true
  [ -n "$host_task" ] && XDG_DATA_HOME="$work/data" "$chock" tasks cancel "$host_task" >/dev/null 2>&1 || true
  [ -n "$direct_pid" ] && kill "$direct_pid" 2>/dev/null || true
  XDG_DATA_HOME="$work/data" "$chock" workspace remove --all --force >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
mkdir -p "$work/project" "$work/data" "$work/state"
cd "$work/project"
echo "a small page" > small.txt
head -c 100000000 /dev/urandom > big.bin
printf '.{ .policy = .{ .rules = .{ .{ .action = "net.publish.8000", .decision = .allow } } } }\n' > chock.zon
python3 -m http.server 18100 --bind 127.0.0.1 >/dev/null 2>&1 &
direct_pid=$!
out=$(XDG_DATA_HOME="$work/data" XDG_STATE_HOME="$work/state" "$chock" run --background --publish 18101:8000 -- \
  python3 -m http.server 8000 --bind 127.0.0.1 2>&1)
task=$(printf '%s\n' "$out" | sed -n 's/^chock: task \([a-z0-9-]*\) started.*/\1/p')
# The same server in a call on the host's network: what the sandbox costs
# the server, apart from the published port's relay.
out=$(XDG_DATA_HOME="$work/data" XDG_STATE_HOME="$work/state" "$chock" run --background --net host -- \
  python3 -m http.server 18102 --bind 127.0.0.1 2>&1)
host_task=$(printf '%s\n' "$out" | sed -n 's/^chock: task \([a-z0-9-]*\) started.*/\1/p')
cat > "$work/client.py" <<'PY'
import http.client, statistics, sys, time
requests = int(sys.argv[1])
def ready(port):
    for _ in range(100):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5); c.request("GET", "/small.txt")
            if c.getresponse().read(): return
        except OSError: time.sleep(0.1)
    sys.exit("the server on %d never answered" % port)
def latency(port):
    times = []
    for _ in range(requests):
        t = time.perf_counter()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5); c.request("GET", "/small.txt")
        c.getresponse().read(); c.close()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9)]
def throughput(port):
    rates = []
    for _ in range(3):
        t = time.perf_counter()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30); c.request("GET", "/big.bin")
        r = c.getresponse(); n = 0
        while True:
            b = r.read(1 << 20)
            if not b: break
            n += len(b)
        rates.append(n / (time.perf_counter() - t) / 1e6)
        assert n == 100000000, n
    return statistics.median(rates)
rows = {}
servers = (("direct", 18100), ("in a call", 18102), ("published", 18101))
for name, port in servers:
    ready(port)
for name, port in servers + servers:
    med, p90 = latency(port)
    rate = throughput(port)
    rows.setdefault(name, []).append((med, p90, rate))
print("%-10s %14s %14s %16s" % ("server", "GET median ms", "GET p90 ms", "100 MB MB/s"))
for name, runs in rows.items():
    med = statistics.median(r[0] for r in runs); p90 = statistics.median(r[1] for r in runs)
    rate = statistics.median(r[2] for r in runs)
    print("%-10s %14.3f %14.3f %16.0f" % (name, med, p90, rate))
d, p = rows["direct"], rows["published"]
print("published - direct, GET median: %.3f ms; throughput: %.2f of direct" % (
    statistics.median(r[0] for r in p) - statistics.median(r[0] for r in d),
    statistics.median(r[2] for r in p) / statistics.median(r[2] for r in d)))
PY
python3 "$work/client.py" "$requests"
