#!/usr/bin/env python3
"""kafka-python's KafkaAdminClient creating a topic while its metadata names
an old controller, for tests/cluster.rs.

Learns the controller (the client caches its id), prints "READY <id>",
then waits for a line on stdin (the test moves the controller meanwhile)
and creates TOPIC (1 partition, replication factor 2). The old controller
answers NOT_CONTROLLER and kafka-python asks the new one. Prints
"OK <topic>" or "FAILED: <error>" and exits 1 on failure.
"""
import argparse
import sys

from kafka.admin import KafkaAdminClient, NewTopic


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("topic")
    args = parser.parse_args()
    admin = KafkaAdminClient(
        bootstrap_servers=args.bootstrap,
        client_id="stale-controller-admin",
        request_timeout_ms=30000,
    )
    controller = admin.describe_cluster()["controller_id"]
    print(f"READY {controller}", flush=True)
    sys.stdin.readline()
    try:
        admin.create_topics(
            [NewTopic(args.topic, num_partitions=1, replication_factor=2)],
            timeout_ms=30000,
        )
    except Exception as e:  # the test prints whatever went wrong
        print(f"FAILED: {type(e).__name__}: {e}", flush=True)
        sys.exit(1)
    finally:
        admin.close()
    print(f"OK {args.topic}", flush=True)


if __name__ == "__main__":
    main()
