#!/usr/bin/env python3
"""librdkafka (confluent-kafka, whose wheel has SCRAM) over SASL_PLAINTEXT,
for tests/security.rs.

As USER/PASSWORD with MECHANISM: produces COUNT records to TOPIC
(acks=all), one at a time, and prints "OK <offsets...>" (the acknowledged
offsets in send order); any failure prints "FAILED: <error>" and exits 1.
"""
import argparse
import sys

from confluent_kafka import Producer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--mechanism", required=True)
    parser.add_argument("--count", type=int, default=2)
    parser.add_argument("topic")
    args = parser.parse_args()
    errors = []

    def on_error(error):
        errors.append(error)

    producer = Producer({
        "bootstrap.servers": args.bootstrap,
        "broker.address.family": "v4",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": args.mechanism,
        "sasl.username": args.user,
        "sasl.password": args.password,
        "acks": "all",
        "message.timeout.ms": 15000,
        "error_cb": on_error,
    })
    offsets = []
    for i in range(args.count):
        delivered = []
        producer.produce(args.topic, f"{args.user}-{i}".encode(),
                         on_delivery=lambda err, msg: delivered.append((err, msg)))
        producer.flush(20)
        if not delivered or delivered[0][0] is not None:
            reason = delivered[0][0] if delivered else (errors[-1] if errors else "no delivery report")
            print(f"FAILED: {reason}", flush=True)
            sys.exit(1)
        offsets.append(delivered[0][1].offset())
    print("OK " + " ".join(str(o) for o in offsets), flush=True)


if __name__ == "__main__":
    main()
