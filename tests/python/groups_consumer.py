#!/usr/bin/env python3
"""One kafka-python consumer-group member, driven by tests/groups.rs.

It subscribes to --topic in --group with the named assignor and reports on
stdout, one line per event, flushed at once:

    READY                      subscribed
    ASSIGNED 0,3               partitions assigned (sorted; "" for none)
    REVOKED 0,3                partitions revoked
    REC <partition> <offset> <value>   one record (value decoded as UTF-8)
    CLOSED                     consumer closed (LeaveGroup sent)

It never commits (enable_auto_commit=False): the tests make every record's
delivery depend on the group's assignment only. A line "STOP" on stdin (or
stdin closing) closes the consumer cleanly, which sends LeaveGroup; SIGKILL
is how a test makes it vanish without one. Every wait is bounded by
--max-seconds.
"""
import argparse
import select
import sys
import time

from kafka import ConsumerRebalanceListener, KafkaConsumer
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

ASSIGNORS = {
    "range": [RangePartitionAssignor],
    "roundrobin": [RoundRobinPartitionAssignor],
}


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def partitions_text(partitions):
    return ",".join(str(p) for p in sorted(tp.partition for tp in partitions))


class Listener(ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked):
        say("REVOKED " + partitions_text(revoked))

    def on_partitions_assigned(self, assigned):
        say("ASSIGNED " + partitions_text(assigned))


def stop_requested():
    readable, _, _ = select.select([sys.stdin], [], [], 0)
    if not readable:
        return False
    line = sys.stdin.readline()
    # EOF (the test dropped our stdin) or an explicit STOP.
    return line == "" or line.strip() == "STOP"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--assignor", choices=sorted(ASSIGNORS), default="range")
    parser.add_argument("--client-id", default="groups-python")
    parser.add_argument("--session-timeout-ms", type=int, default=10000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=500)
    parser.add_argument("--max-seconds", type=float, default=120.0)
    args = parser.parse_args()

    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        client_id=args.client_id,
        group_id=args.group,
        partition_assignment_strategy=ASSIGNORS[args.assignor],
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
        request_timeout_ms=max(30000, args.session_timeout_ms + 5000),
        fetch_max_wait_ms=100,
    )
    consumer.subscribe([args.topic], listener=Listener())
    say("READY")
    deadline = time.monotonic() + args.max_seconds
    while time.monotonic() < deadline:
        if stop_requested():
            break
        batches = consumer.poll(timeout_ms=100)
        for tp, records in batches.items():
            for record in records:
                value = record.value.decode("utf-8") if record.value is not None else ""
                say(f"REC {tp.partition} {record.offset} {value}")
    consumer.close(autocommit=False)
    say("CLOSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
