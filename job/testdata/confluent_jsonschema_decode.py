"""Decodes Kafka records (a key and a value in hex a line, separated by a
space) as Confluent's own client library does: JSON framed with a schema id
(python3-confluent-kafka's SchemaRegistryClient looks the schema up by id
in the registry; its JSONDeserializer checks the framing and validates the
record against that schema with python3-jsonschema). Prints one JSON object
a record, {"key": ..., "value": ..., "key_schema": TITLE, "value_schema":
TITLE}; a record that does not validate fails the script.

    confluent_jsonschema_decode.py REGISTRY_URL < records
"""
import json
import struct
import sys

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

client = SchemaRegistryClient({"url": sys.argv[1]})
by_id = {}


def decode(b, field):
    if len(b) < 5 or b[0] != 0:
        raise SystemExit("not in the registry's framing: %s" % b[:5].hex())
    schema_id = struct.unpack(">I", b[1:5])[0]
    if schema_id not in by_id:
        s = client.get_schema(schema_id)
        if s.schema_type != "JSON":
            raise SystemExit("schema %d is of type %s" % (schema_id, s.schema_type))
        by_id[schema_id] = (JSONDeserializer(s.schema_str), json.loads(s.schema_str)["title"])
    des, title = by_id[schema_id]
    return des(b, SerializationContext("alerts", field)), title


for line in sys.stdin:
    if not line.strip():
        continue
    k, v = line.split()
    key, kt = decode(bytes.fromhex(k), MessageField.KEY)
    value, vt = decode(bytes.fromhex(v), MessageField.VALUE)
    sys.stdout.write(json.dumps({"key": key, "value": value, "key_schema": kt, "value_schema": vt}) + "\n")
