"""Decodes Kafka records (a key and a value in hex a line, separated by a
space) as Confluent's own client library does: Avro framed with a schema id
that it looks up in the schema registry (python3-confluent-kafka's
MessageSerializer and CachedSchemaRegistryClient, with Apache Avro's
python3-avro beneath). Prints one JSON object a record, {"key": ...,
"value": ...}, a timestamp as RFC 3339 with milliseconds.

    confluent_avro_decode.py REGISTRY_URL < records
"""
import datetime
import json
import sys

from confluent_kafka.avro.cached_schema_registry_client import CachedSchemaRegistryClient
from confluent_kafka.avro.serializer.message_serializer import MessageSerializer

ser = MessageSerializer(CachedSchemaRegistryClient({"url": sys.argv[1]}))


def plain(v):
    if isinstance(v, datetime.datetime):
        v = v.astimezone(datetime.timezone.utc)
        return v.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (v.microsecond // 1000)
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


for line in sys.stdin:
    if not line.strip():
        continue
    k, v = line.split()
    rec = {"key": plain(ser.decode_message(bytes.fromhex(k), is_key=True)),
           "value": plain(ser.decode_message(bytes.fromhex(v), is_key=False))}
    sys.stdout.write(json.dumps(rec) + "\n")
