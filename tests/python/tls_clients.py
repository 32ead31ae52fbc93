#!/usr/bin/env python3
"""librdkafka (confluent-kafka) or kafka-python over SSL or SASL_SSL, for
tests/tls.rs.

Produces COUNT records to partition 0 of TOPIC (acks=all), one request
each, then reads partition 0 from the first of them, and prints
"OK produced <offsets...> consumed <offsets...>" (acknowledged offsets in
send order, then the offsets read with their values checked); any failure
prints "FAILED: <error>" and exits 1. The broker is trusted through --ca;
--cert/--key present a client certificate (mutual TLS).
"""
import argparse
import sys


def confluent(args):
    from confluent_kafka import Consumer, Producer, TopicPartition

    common = {
        "bootstrap.servers": args.bootstrap,
        "broker.address.family": "v4",
        "security.protocol": args.protocol,
        "ssl.ca.location": args.ca,
    }
    if args.cert:
        common["ssl.certificate.location"] = args.cert
        common["ssl.key.location"] = args.key
    if args.user:
        common.update({
            "sasl.mechanism": args.mechanism,
            "sasl.username": args.user,
            "sasl.password": args.password,
        })
    errors = []
    producer = Producer(dict(common, **{
        "acks": "all",
        "message.timeout.ms": 15000,
        "error_cb": errors.append,
    }))
    offsets = []
    for i in range(args.count):
        delivered = []
        producer.produce(args.topic, f"{args.tag}-{i}".encode(), partition=0,
                         on_delivery=lambda err, msg: delivered.append((err, msg)))
        producer.flush(20)
        if not delivered or delivered[0][0] is not None:
            reason = delivered[0][0] if delivered else (errors[-1] if errors else "no delivery report")
            raise RuntimeError(str(reason))
        offsets.append(delivered[0][1].offset())
    consumer = Consumer(dict(common, **{
        "group.id": f"tls-{args.tag}",
        "enable.auto.commit": False,
        "error_cb": errors.append,
    }))
    consumer.assign([TopicPartition(args.topic, 0, offsets[0])])
    consumed = []
    while len(consumed) < len(offsets):
        message = consumer.poll(15)
        if message is None:
            raise RuntimeError(f"nothing to read after {consumed}")
        if message.error():
            raise RuntimeError(str(message.error()))
        expected = f"{args.tag}-{len(consumed)}".encode()
        if message.value() != expected:
            raise RuntimeError(f"read {message.value()!r} at {message.offset()}, expected {expected!r}")
        consumed.append(message.offset())
    consumer.close()
    return offsets, consumed


def kafka_python(args):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    common = {
        "bootstrap_servers": args.bootstrap,
        "security_protocol": args.protocol,
        "ssl_cafile": args.ca,
        "ssl_check_hostname": True,
    }
    if args.cert:
        common["ssl_certfile"] = args.cert
        common["ssl_keyfile"] = args.key
    if args.user:
        common.update({
            "sasl_mechanism": args.mechanism,
            "sasl_plain_username": args.user,
            "sasl_plain_password": args.password,
        })
    producer = KafkaProducer(acks="all", request_timeout_ms=15000, **common)
    offsets = []
    for i in range(args.count):
        metadata = producer.send(args.topic, f"{args.tag}-{i}".encode(), partition=0).get(timeout=20)
        offsets.append(metadata.offset)
    producer.close()
    consumer = KafkaConsumer(enable_auto_commit=False, consumer_timeout_ms=15000, **common)
    partition = TopicPartition(args.topic, 0)
    consumer.assign([partition])
    consumer.seek(partition, offsets[0])
    consumed = []
    for message in consumer:
        expected = f"{args.tag}-{len(consumed)}".encode()
        if message.value != expected:
            raise RuntimeError(f"read {message.value!r} at {message.offset}, expected {expected!r}")
        consumed.append(message.offset)
        if len(consumed) == len(offsets):
            break
    consumer.close()
    return offsets, consumed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", choices=["confluent", "kafka-python"], required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--protocol", default="SSL")
    parser.add_argument("--ca", required=True)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--user")
    parser.add_argument("--password")
    parser.add_argument("--mechanism", default="PLAIN")
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--tag", default="tls")
    parser.add_argument("topic")
    args = parser.parse_args()
    try:
        run = confluent if args.client == "confluent" else kafka_python
        offsets, consumed = run(args)
    except Exception as e:  # the test reads the reason
        print(f"FAILED: {type(e).__name__}: {e}", flush=True)
        sys.exit(1)
    print("OK produced " + " ".join(map(str, offsets)) + " consumed " + " ".join(map(str, consumed)), flush=True)


if __name__ == "__main__":
    main()
