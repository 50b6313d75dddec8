"""Encodes orders (JSON lines on standard input) as Confluent's own client
library does: Protobuf framed with the schema's id and the message's
indexes (python3-confluent-kafka's ProtobufSerializer and
SchemaRegistryClient, which register the schema under TOPIC-value and its
imports, google/protobuf/timestamp.proto among them, as references). The
message class is the one protoc generated (--python_out) into GEN_DIR as
MODULE_pb2. Prints one record a line, in hex.

    confluent_protobuf.py REGISTRY_URL TOPIC GEN_DIR MODULE < orders.jsonl
"""
import importlib
import json
import sys

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

url, topic, gen_dir, module = sys.argv[1:5]
sys.path.insert(0, gen_dir)
pb = importlib.import_module(module + "_pb2")
ser = ProtobufSerializer(pb.Order, SchemaRegistryClient({"url": url}))
ctx = SerializationContext(topic, MessageField.VALUE)

for line in sys.stdin.read().splitlines():
    if not line.strip():
        continue
    o = json.loads(line)
    m = pb.Order(order_id=o["order_id"], card=o["card"], user_id=o["user_id"], amount=float(o["amount"]))
    m.ts.FromJsonString(o["ts"])
    if "arrival" in o:
        m.arrival.FromJsonString(o["arrival"])
    if "channel" in pb.Order.DESCRIPTOR.fields_by_name:
        m.channel = "app"
    sys.stdout.write(ser(m, ctx).hex() + "\n")
