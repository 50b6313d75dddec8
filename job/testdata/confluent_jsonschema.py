"""Encodes orders (JSON lines on standard input) as Confluent's own client
library does: JSON framed with the schema's id from a schema registry
(python3-confluent-kafka's JSONSerializer and SchemaRegistryClient, which
register the schema under TOPIC-value and validate each order against it
with python3-jsonschema). The first half is written with schema V1, the
rest with V2 (a field added, channel). Prints one record a line, in hex.

    confluent_jsonschema.py REGISTRY_URL TOPIC V1.json V2.json < orders.jsonl
"""
import json
import sys

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

url, topic, v1_file, v2_file = sys.argv[1:5]
client = SchemaRegistryClient({"url": url})
v1 = JSONSerializer(open(v1_file).read(), client)
v2 = JSONSerializer(open(v2_file).read(), client)
ctx = SerializationContext(topic, MessageField.VALUE)

lines = [l for l in sys.stdin.read().splitlines() if l.strip()]
for i, line in enumerate(lines):
    o = json.loads(line)
    ser = v1
    if i >= len(lines) // 2:
        ser = v2
        o["channel"] = "app"
    sys.stdout.write(ser(o, ctx).hex() + "\n")
