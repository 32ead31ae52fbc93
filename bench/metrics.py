#!/usr/bin/env python3
"""What metrics cost the produce path (issue 24): the same release broker
and the same librdkafka producer (examples/perf.rs), with and without a
scraper reading /metrics every second, in the same run. See
bench/README.md.

With FERROLOG_BENCH_BASELINE=PATH (a broker binary built without the
metrics, e.g. the commit before them), a third mode runs it the same way,
so what counting costs is measured too, not only what scraping adds.

Each repeat starts a fresh broker per mode (rotating which goes first),
creates one topic, and produces COUNT records of SIZE bytes (acks=1, as
fast as the client goes). In the scraped mode a thread GETs
http://.../metrics every second throughout and checks each answer is a
200 ending in "# EOF". Prints each mode's median records/s, the median of
per-repeat ratios (scraped / quiet), and the scrapes' median latency.

Environment (all optional):
  FERROLOG_BENCH_REPEATS=5
  FERROLOG_BENCH_COUNT=3000000
  FERROLOG_BENCH_SIZE=100
  FERROLOG_BENCH_NO_BUILD=1   use the release binaries as they are
  FERROLOG_BENCH_BASELINE=PATH  also run this broker binary (unscraped)
  CARGO_TARGET_DIR            where they are

Everything listens on 127.0.0.1; every process it starts is stopped and
every file it writes is removed on exit (bounded waits throughout).
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tls import free_port, log, wait_port  # noqa: E402  (bench/tls.py's helpers)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPEATS = int(os.environ.get("FERROLOG_BENCH_REPEATS", "5"))
COUNT = int(os.environ.get("FERROLOG_BENCH_COUNT", "3000000"))
SIZE = int(os.environ.get("FERROLOG_BENCH_SIZE", "100"))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


class Scraper(threading.Thread):
    def __init__(self, url):
        super().__init__(daemon=True)
        self.url, self.stop, self.took, self.failures = url, threading.Event(), [], []

    def run(self):
        while not self.stop.wait(1.0):
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(self.url, timeout=10) as response:
                    body = response.read().decode()
                if response.status != 200 or not body.rstrip().endswith("# EOF"):
                    self.failures.append(f"status {response.status}")
            except OSError as e:
                self.failures.append(str(e))
            self.took.append((time.perf_counter() - started) * 1000)


def run_case(work, perf, mode):
    scraped = mode == "scraped"
    binary = os.environ["FERROLOG_BENCH_BASELINE"] if mode == "baseline" \
        else os.path.join(TARGET, "release", "ferrolog")
    port, http_port = free_port(), free_port()
    data = tempfile.mkdtemp(dir=work)
    broker = subprocess.Popen(
        [binary, "--config",
         os.path.join(ROOT, "config", "server.properties"),
         "--override", f"log.dirs={data}",
         "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
         "--override", f"http.listener=http://127.0.0.1:{http_port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, RUST_LOG="warn"))
    scraper = None
    try:
        wait_port(port, broker)
        bootstrap = f"127.0.0.1:{port}"
        subprocess.run([perf, "create-topic", "--bootstrap", bootstrap, "--topic", "scraped",
                        "--partitions", "1"], check=True, capture_output=True, timeout=120)
        if scraped:
            scraper = Scraper(f"http://127.0.0.1:{http_port}/metrics")
            scraper.start()
        out = subprocess.run([perf, "produce", "--bootstrap", bootstrap, "--topic", "scraped",
                              "--count", str(COUNT), "--size", str(SIZE)],
                             check=True, capture_output=True, text=True, timeout=900).stdout
        fields = dict(f.split("=", 1) for f in out.split())
        return float(fields["records_per_sec"]), scraper
    finally:
        if scraper:
            scraper.stop.set()
            scraper.join(15)
        broker.terminate()
        try:
            broker.wait(30)
        except subprocess.TimeoutExpired:
            broker.kill()
        shutil.rmtree(data, ignore_errors=True)


def main():
    if os.environ.get("FERROLOG_BENCH_NO_BUILD") != "1":
        log("cargo build --release --bin ferrolog --example perf")
        subprocess.run(["cargo", "build", "--release", "--bin", "ferrolog", "--example", "perf"],
                       cwd=ROOT, check=True)
    perf = os.path.join(TARGET, "release", "examples", "perf")
    work = tempfile.mkdtemp(prefix="ferrolog-metrics-bench")
    modes = ["quiet", "scraped"] + (["baseline"] if os.environ.get("FERROLOG_BENCH_BASELINE") else [])
    rates = {mode: [] for mode in modes}
    scrape_ms, scrapes, failures = [], 0, []
    try:
        for repeat in range(REPEATS):
            for mode in modes[repeat % len(modes):] + modes[:repeat % len(modes)]:
                rate, scraper = run_case(work, perf, mode)
                rates[mode].append(rate)
                if scraper:
                    scrape_ms += scraper.took
                    scrapes += len(scraper.took)
                    failures += scraper.failures
                log(f"repeat {repeat} {mode}: {rate:.0f} records/s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{COUNT} records of {SIZE} B, acks=1, 1 partition, {REPEATS} repeats (medians)")
    for mode in modes:
        extra = (f" ({scrapes} scrapes, median {statistics.median(scrape_ms) if scrape_ms else 0:.1f} ms, "
                 f"{len(failures)} failed)") if mode == "scraped" else ""
        print(f"  {mode:9} {statistics.median(rates[mode]):11.0f} records/s{extra}")

    def ratio(a, b):
        ratios = [x / y for x, y in zip(rates[a], rates[b])]
        print(f"  {a} / {b}: {statistics.median(ratios):.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
    ratio("scraped", "quiet")
    if "baseline" in rates:
        ratio("quiet", "baseline")
        ratio("scraped", "baseline")
    if failures:
        sys.exit(f"scrapes failed: {failures[:3]}")


if __name__ == "__main__":
    main()
