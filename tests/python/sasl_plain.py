#!/usr/bin/env python3
"""kafka-python over SASL_PLAINTEXT (PLAIN or SCRAM), for tests/security.rs.

As USER/PASSWORD: produces COUNT records to TOPIC (acks=all), waits for
every acknowledgement, reads them back from the beginning and prints
"OK <offsets...>" (the acknowledged offsets, in send order) and
"READ <values...>"; an authentication or authorization failure prints
"FAILED: <ErrorClass>" and exits 1.
"""
import argparse
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--count", type=int, default=5)
    parser.add_argument("--mechanism", default="PLAIN")
    parser.add_argument("topic")
    args = parser.parse_args()
    security = dict(
        bootstrap_servers=args.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=args.mechanism,
        sasl_plain_username=args.user,
        sasl_plain_password=args.password,
        request_timeout_ms=20000,
    )
    try:
        producer = KafkaProducer(acks="all", retries=0, **security)
        futures = [
            producer.send(args.topic, f"{args.user}-{i}".encode()) for i in range(args.count)
        ]
        offsets = [f.get(timeout=30).offset for f in futures]
        producer.close()
        print("OK " + " ".join(str(o) for o in offsets), flush=True)
        consumer = KafkaConsumer(consumer_timeout_ms=10000, **security)
        partition = TopicPartition(args.topic, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        values = []
        for record in consumer:
            values.append(record.value.decode())
            if len(values) >= args.count:
                break
        consumer.close()
        print("READ " + " ".join(values), flush=True)
    except Exception as e:  # the test asserts on the class name
        print(f"FAILED: {type(e).__name__}: {e}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
