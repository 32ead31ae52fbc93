#!/usr/bin/env python3
"""Produce keyed records to ferrolog with confluent-kafka (librdkafka),
compressed with --compression (lz4 by default), then read them back with an
assigned consumer (no subscribe, no commits) and check exact equality.
--consume-only reads records another client wrote (same expected records).

The consumer needs a group.id to be created at all, but it never joins,
commits or looks up a coordinator: it only uses assign().

Exit 0 and print "OK ..." on exact equality; exit 1 with the first difference
otherwise. Every wait is bounded.
"""
import argparse
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from expected_records import expected_records


def produce(args, expected):
    """Produce `expected` to partition 0; an error message or None."""
    errors = []
    offsets = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            offsets.append(msg.offset())

    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "acks": 1,
            "compression.type": args.compression,
            "linger.ms": 5,
            "message.timeout.ms": int(args.timeout * 1000),
        }
    )
    for k, v in expected:
        while True:
            try:
                producer.produce(args.topic, key=k, value=v, partition=0, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
    remaining = producer.flush(args.timeout)
    if remaining or errors or len(offsets) != len(expected):
        return f"produce: {remaining} undelivered, errors {errors[:3]}, {len(offsets)} delivered"
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--compression", default="lz4")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument(
        "--consume-only",
        action="store_true",
        help="skip producing: read what another client wrote",
    )
    args = parser.parse_args()

    expected = expected_records(args.count)

    if not args.consume_only:
        failure = produce(args, expected)
        if failure:
            print(f"FAIL {failure}", file=sys.stderr)
            return 1

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": "ferrolog-test-unused",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
        }
    )
    # An all-topics Metadata request (librdkafka sends v12 with stray bytes
    # after the null topics array, which Kafka tolerates).
    listed = consumer.list_topics(timeout=args.timeout)
    if args.topic not in listed.topics:
        print(f"FAIL list_topics lacks {args.topic}: {sorted(listed.topics)}", file=sys.stderr)
        return 1

    consumer.assign([TopicPartition(args.topic, 0, OFFSET_BEGINNING)])
    got = []
    deadline = time.monotonic() + args.timeout
    while len(got) < len(expected) and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                continue
            print(f"FAIL consume error: {msg.error()}", file=sys.stderr)
            return 1
        got.append((msg.key(), msg.value()))
    consumer.close()

    if len(got) != len(expected):
        print(f"FAIL consumed {len(got)} of {len(expected)}", file=sys.stderr)
        return 1
    for i, (g, e) in enumerate(zip(got, expected)):
        if g != e:
            print(f"FAIL record {i}: got {g!r}, expected {e!r}", file=sys.stderr)
            return 1
    produced = 0 if args.consume_only else len(expected)
    print(f"OK produced={produced} consumed={len(got)} compression={args.compression}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
