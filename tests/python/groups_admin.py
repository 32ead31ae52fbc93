#!/usr/bin/env python3
"""kafka-python's KafkaAdminClient view of consumer groups, for tests/groups.rs.

Prints one JSON object:

    {"list": {group: {"protocol_type": ..., "state": ...}},
     "describe": {group: {"state": ..., "protocol_type": ..., "protocol": ...,
                          "members": <count>, "error": ...}}}

`list` comes from ListGroups (every group), `describe` from DescribeGroups
for the groups named on the command line. Exit 1 on any client error.
"""
import argparse
import json
import sys

from kafka.admin import KafkaAdminClient


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("groups", nargs="*")
    args = parser.parse_args()

    admin = KafkaAdminClient(
        bootstrap_servers=args.bootstrap,
        client_id="groups-admin",
        request_timeout_ms=30000,
    )
    try:
        listed = {}
        for group in admin.list_groups():
            listed[group["group_id"]] = {
                "protocol_type": group.get("protocol_type"),
                "state": group.get("group_state"),
            }
        described = {}
        if args.groups:
            for group_id, group in admin.describe_groups(args.groups).items():
                described[group_id] = {
                    "state": group.get("group_state"),
                    "protocol_type": group.get("protocol_type"),
                    "protocol": group.get("protocol_data"),
                    "members": len(group.get("members") or []),
                    "error": group.get("error"),
                }
    finally:
        admin.close()
    json.dump({"list": listed, "describe": described}, sys.stdout, default=str)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
