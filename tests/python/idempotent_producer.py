#!/usr/bin/env python3
"""Produce ids 0..count-1 to a topic with an idempotent producer: id i goes
to partition i % partitions, its value the decimal id. --client picks
kafka-python (enable_idempotence=True) or confluent-kafka
(enable.idempotence=true). The Rust test reads the topic back and checks
every id is stored exactly once, in order.

Exit 0 and print "OK <count>" when every record was acknowledged; exit 1
with the first error otherwise. Every wait is bounded.
"""
import argparse
import sys


def with_kafka_python(args):
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=args.bootstrap,
        enable_idempotence=True,
        acks="all",
        linger_ms=2,
        request_timeout_ms=30000,
    )
    futures = [
        producer.send(args.topic, value=str(i).encode(), partition=i % args.partitions)
        for i in range(args.count)
    ]
    producer.flush(timeout=120)
    for future in futures:
        future.get(timeout=120)
    producer.close(timeout=30)


def with_confluent(args):
    from confluent_kafka import Producer

    errors = []

    def on_delivery(err, _msg):
        if err is not None:
            errors.append(err)

    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 2,
            "message.timeout.ms": 120000,
            "broker.address.family": "v4",
        }
    )
    for i in range(args.count):
        while True:
            try:
                producer.produce(
                    args.topic,
                    value=str(i).encode(),
                    partition=i % args.partitions,
                    on_delivery=on_delivery,
                )
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    remaining = producer.flush(120)
    if remaining or errors:
        raise RuntimeError(f"{remaining} undelivered, errors: {errors[:3]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--client", choices=["kafka-python", "confluent"], required=True)
    args = parser.parse_args()
    try:
        if args.client == "kafka-python":
            with_kafka_python(args)
        else:
            with_confluent(args)
    except Exception as e:  # noqa: BLE001 - any failure is the test's answer
        print(f"FAILED: {e!r}")
        sys.exit(1)
    print(f"OK {args.count}")


if __name__ == "__main__":
    main()
