"""Encodes orders (JSON lines on standard input) as Confluent's own client
library does: Avro framed with the schema's id from a schema registry
(python3-confluent-kafka's MessageSerializer and CachedSchemaRegistryClient,
the schemas registered by it under TOPIC-value). The first half is written
with schema v1, the rest with v2 (a field added with a default). Prints one
record a line, in hex.

    confluent_avro.py REGISTRY_URL TOPIC V1.avsc V2.avsc < orders.jsonl
"""
import datetime
import json
import sys

from confluent_kafka import avro
from confluent_kafka.avro.cached_schema_registry_client import CachedSchemaRegistryClient
from confluent_kafka.avro.serializer.message_serializer import MessageSerializer

url, topic, v1_file, v2_file = sys.argv[1:5]
v1 = avro.loads(open(v1_file).read())
v2 = avro.loads(open(v2_file).read())
ser = MessageSerializer(CachedSchemaRegistryClient({"url": url}))

lines = [l for l in sys.stdin.read().splitlines() if l.strip()]
for i, line in enumerate(lines):
    o = json.loads(line)
    ts = datetime.datetime.strptime(o["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    rec = {"order_id": o["order_id"], "card": o.get("card"), "user_id": o["user_id"],
           "amount": float(o["amount"]), "ts": ts}
    schema = v1
    if i >= len(lines) // 2:
        schema = v2
        rec["channel"] = "app"
    sys.stdout.write(ser.encode_record_with_schema(topic, schema, rec).hex() + "\n")
