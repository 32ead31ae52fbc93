#!/usr/bin/env python3
"""Produce keyed records to ferrolog with kafka-python, read them back with an
assigned (group-less) consumer and check they are exactly what was sent.

--api-version auto negotiates with ApiVersions (record batch v2);
0.10 pins message format v1, 0.9 pins message format v0 (compressed wrappers
of both are accepted; v0 ones are rebuilt with absolute inner offsets).
--compression picks the codec (kafka-python needs the `lz4` package for lz4).

Exit 0 and print "OK ..." on exact equality; exit 1 with the first difference
otherwise. Every wait is bounded.
"""
import argparse
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from expected_records import expected_records


def parse_api_version(text):
    if text == "auto":
        return None
    return tuple(int(p) for p in text.split("."))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--api-version", default="auto")
    parser.add_argument("--compression", default=None)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()

    api_version = parse_api_version(args.api_version)
    common = {"bootstrap_servers": args.bootstrap}
    if api_version is not None:
        common["api_version"] = api_version

    expected = expected_records(args.count)

    producer = KafkaProducer(
        acks=1,
        compression_type=args.compression,
        linger_ms=5,
        request_timeout_ms=int(args.timeout * 1000),
        **common,
    )
    futures = [
        producer.send(args.topic, key=k, value=v, partition=0) for k, v in expected
    ]
    producer.flush(timeout=args.timeout)
    offsets = [f.get(timeout=args.timeout).offset for f in futures]
    producer.close(timeout=args.timeout)
    if offsets != list(range(offsets[0], offsets[0] + len(offsets))):
        print(f"FAIL offsets not contiguous: {offsets[:5]}...", file=sys.stderr)
        return 1

    consumer = KafkaConsumer(
        group_id=None,
        enable_auto_commit=False,
        consumer_timeout_ms=int(args.timeout * 1000),
        **common,
    )
    tp = TopicPartition(args.topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got = []
    deadline = time.monotonic() + args.timeout
    while len(got) < len(expected) and time.monotonic() < deadline:
        batch = consumer.poll(timeout_ms=1000)
        for records in batch.values():
            for r in records:
                got.append((r.key, r.value))
    consumer.close()

    if len(got) != len(expected):
        print(f"FAIL consumed {len(got)} of {len(expected)}", file=sys.stderr)
        return 1
    for i, (g, e) in enumerate(zip(got, expected)):
        if g != e:
            print(f"FAIL record {i}: got {g!r}, expected {e!r}", file=sys.stderr)
            return 1
    print(f"OK produced={len(expected)} consumed={len(got)} first_offset={offsets[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
