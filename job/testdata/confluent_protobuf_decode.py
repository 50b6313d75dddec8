"""Decodes Kafka records (a key and a value in hex a line, separated by a
space) as Confluent's own client library does: Protobuf framed with a
schema id and message indexes. Each record's schema is looked up by its id
in the registry (python3-confluent-kafka's SchemaRegistryClient), compiled
by protoc (--python_out) into a message class, and the record read by the
client's ProtobufDeserializer with that class. Prints one JSON object a
record, {"key": ..., "value": ..., "key_schema": FULL_NAME, "value_schema":
FULL_NAME}, each message's fields by name: every field of the message, but
an optional one that is absent.

    confluent_protobuf_decode.py REGISTRY_URL PROTOC < records
"""
import importlib
import json
import os
import struct
import subprocess
import sys
import tempfile

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

client = SchemaRegistryClient({"url": sys.argv[1]})
protoc = sys.argv[2]
gen = tempfile.mkdtemp()
sys.path.insert(0, gen)
by_id = {}


def deserializer(schema_id):
    if schema_id not in by_id:
        s = client.get_schema(schema_id)
        if s.schema_type != "PROTOBUF":
            raise SystemExit("schema %d is of type %s" % (schema_id, s.schema_type))
        name = "s%d" % schema_id
        with open(os.path.join(gen, name + ".proto"), "w") as f:
            f.write(s.schema_str)
        subprocess.run([protoc, "--python_out=" + gen, "-I", gen, name + ".proto"], check=True)
        pb = importlib.import_module(name + "_pb2")
        cls = getattr(pb, list(pb.DESCRIPTOR.message_types_by_name)[0])
        by_id[schema_id] = ProtobufDeserializer(cls)
    return by_id[schema_id]


def fields(m):
    out = {}
    for f in m.DESCRIPTOR.fields:
        if f.label == f.LABEL_REPEATED:
            out[f.name] = list(getattr(m, f.name))
            continue
        try:
            if not m.HasField(f.name):
                continue
        except ValueError:
            pass  # a field without presence: its value, default or not
        out[f.name] = getattr(m, f.name)
    return out


def decode(b, field):
    if len(b) < 6 or b[0] != 0:
        raise SystemExit("not in the registry's framing: %s" % b[:6].hex())
    schema_id = struct.unpack(">I", b[1:5])[0]
    m = deserializer(schema_id)(b, SerializationContext("alerts", field))
    return fields(m), m.DESCRIPTOR.full_name


for line in sys.stdin:
    if not line.strip():
        continue
    k, v = line.split()
    key, kt = decode(bytes.fromhex(k), MessageField.KEY)
    value, vt = decode(bytes.fromhex(v), MessageField.VALUE)
    sys.stdout.write(json.dumps({"key": key, "value": value, "key_schema": kt, "value_schema": vt}) + "\n")
