#!/usr/bin/env python3
"""The acknowledged-records checker over SASL_SSL, for tests/tls.rs.

librdkafka (confluent-kafka) creates TOPIC (PARTITIONS partitions, 3
replicas, min.insync.replicas=2), prints "READY", then sends ids 0, 1, 2,
... at a steady rate (id i to partition i % PARTITIONS; acks=all,
idempotence on) while the test kills brokers. It prints "ACKED <n>" about
every second. When a line arrives on stdin it stops sending, waits for
every delivery report, reads every partition from its start and checks
each acknowledged id against what it read:

- lost: acknowledged, never read;
- misplaced: read at another (partition, offset) than acknowledged;
- duplicates: read more than once (idempotence promises none);
- reordered: a partition where a later id precedes an earlier one.

The last line is "OK acked <n> read <m> lost 0 misplaced 0 duplicates 0
reordered 0", or "FAILED: ..." (exit 1) with the counts.
"""
import argparse
import select
import sys
import threading
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("topic")
    args = parser.parse_args()

    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    common = {
        "bootstrap.servers": args.bootstrap,
        "broker.address.family": "v4",
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": args.ca,
        "sasl.mechanism": "PLAIN",
        "sasl.username": args.user,
        "sasl.password": args.password,
    }
    admin = AdminClient(dict(common))
    futures = admin.create_topics([NewTopic(
        args.topic, args.partitions, 3, config={"min.insync.replicas": "2"})])
    futures[args.topic].result(30)
    deadline = time.time() + 60
    while True:
        topic = admin.list_topics(args.topic, timeout=10).topics.get(args.topic)
        if topic and topic.error is None and len(topic.partitions) == args.partitions \
                and all(p.leader >= 0 and len(p.isrs) == 3 for p in topic.partitions.values()):
            break
        if time.time() > deadline:
            raise RuntimeError(f"{args.topic} never had leaders and full ISRs")
        time.sleep(0.2)
    print("READY", flush=True)

    acked = {}  # id -> (partition, offset)
    failed = []
    lock = threading.Lock()

    def report(err, msg):
        with lock:
            if err is None:
                acked[int(msg.value())] = (msg.partition(), msg.offset())
            else:
                failed.append(str(err))

    producer = Producer(dict(common, **{
        "acks": "all",
        "enable.idempotence": True,
        # Long enough to ride out a leader kill and a controller kill.
        "message.timeout.ms": 120000,
        "linger.ms": 5,
    }))
    sent = 0
    last_print = time.time()
    while not select.select([sys.stdin], [], [], 0)[0]:
        producer.produce(args.topic, str(sent).encode(), partition=sent % args.partitions,
                         on_delivery=report)
        sent += 1
        producer.poll(0.0025)
        if time.time() - last_print >= 1:
            with lock:
                print(f"ACKED {len(acked)}", flush=True)
            last_print = time.time()
    remaining = producer.flush(150)

    consumer = Consumer(dict(common, **{
        "group.id": f"checker-{args.topic}",
        "enable.auto.commit": False,
    }))
    ends = {p: consumer.get_watermark_offsets(TopicPartition(args.topic, p), timeout=30)[1]
            for p in range(args.partitions)}
    consumer.assign([TopicPartition(args.topic, p, 0) for p in range(args.partitions)])
    positions = {p: 0 for p in range(args.partitions)}
    read = {}  # id -> [(partition, offset)]
    last_in_partition = {}
    reordered = 0
    deadline = time.time() + 120
    while any(positions[p] < ends[p] for p in positions) and time.time() < deadline:
        message = consumer.poll(1)
        if message is None:
            continue
        if message.error():
            raise RuntimeError(str(message.error()))
        p, o = message.partition(), message.offset()
        positions[p] = o + 1
        i = int(message.value())
        read.setdefault(i, []).append((p, o))
        if last_in_partition.get(p, -1) > i:
            reordered += 1
        last_in_partition[p] = i
    consumer.close()

    lost = [i for i in acked if i not in read]
    misplaced = [i for i, at in acked.items() if i in read and at not in read[i]]
    duplicates = sum(len(at) - 1 for at in read.values())
    counts = (f"acked {len(acked)} read {len(read)} lost {len(lost)} misplaced {len(misplaced)} "
              f"duplicates {duplicates} reordered {reordered}")
    if remaining or lost or misplaced or duplicates or reordered or len(acked) == 0:
        print(f"FAILED: {counts}; sent {sent}, {remaining} undelivered, {len(failed)} failed "
              f"(first {failed[:1]}), lost e.g. {sorted(lost)[:5]}, misplaced e.g. {misplaced[:5]}",
              flush=True)
        sys.exit(1)
    print(f"OK {counts} (sent {sent}, {len(failed)} failed deliveries)", flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the test reads the reason
        print(f"FAILED: {type(e).__name__}: {e}", flush=True)
        sys.exit(1)
