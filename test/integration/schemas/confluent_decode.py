"""Reads a topic from the beginning as a consumer in another team would, knowing only the registry URL and the
topic: confluent-kafka's AvroDeserializer resolves each record's schema by the id in its Confluent prefix.
Prints one JSON line per record (subject-free: eventID, eventName, principalId or retractsEventID) and exits
once it has read `expected` records or the deadline passes.

usage: confluent_decode.py BOOTSTRAP REGISTRY_URL TOPIC EXPECTED TIMEOUT_S
"""

import json
import sys
import time

from confluent_kafka import Consumer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext


def main() -> int:
    bootstrap, registry_url, topic, expected, timeout_s = sys.argv[1:6]
    deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry_url}))
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"confluent-decode-{time.time_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + float(timeout_s)
    read = 0
    try:
        while read < int(expected) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise RuntimeError(str(msg.error()))
            value = deserializer(msg.value(), SerializationContext(topic, MessageField.VALUE))
            out = {"offset": msg.offset(), "partition": msg.partition()}
            if "retractsEventID" in value:
                out["retractsEventID"] = value["retractsEventID"]
            else:
                out["eventID"] = value["eventID"]
                out["eventName"] = value["eventName"]
                out["principalId"] = value["userIdentity"]["principalId"]
            print(json.dumps(out), flush=True)
            read += 1
    finally:
        consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
