#!/usr/bin/env python3
"""Scrapes URL and parses it with the Prometheus project's own Python
parser (prometheus_client's strict OpenMetrics parser, or its text-format
parser for a text/plain answer), for tests/metrics.rs.

Prints one JSON array of [name, {labels}, value] samples; an answer that
does not parse prints "FAILED: ..." and exits 1.
"""
import json
import sys
import urllib.request


def main():
    url = sys.argv[1]
    with urllib.request.urlopen(url, timeout=20) as response:
        content_type = response.headers.get("Content-Type", "")
        text = response.read().decode("utf-8")
    if content_type.startswith("application/openmetrics-text"):
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
    else:
        from prometheus_client.parser import text_string_to_metric_families
    samples = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.append([sample.name, sample.labels, sample.value])
    print(json.dumps(samples))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the test reads the reason
        print(f"FAILED: {type(e).__name__}: {e}", flush=True)
        sys.exit(1)
