"""The records every round-trip script produces and expects back, so one
client can read what another wrote: key `key-<i>`, value `value-<i>-` plus
0..36 filler bytes (compressible, of varying length)."""


def expected_records(count):
    return [
        (f"key-{i}".encode(), f"value-{i}-{'x' * (i % 37)}".encode())
        for i in range(count)
    ]
