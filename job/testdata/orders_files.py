"""Writes orders (JSON lines on standard input) as files of other formats,
with libraries weir did not write: an Avro object container file with
Apache Avro's Python library (python3-avro), deflate blocks of 100 records,
and a CSV file with Python's csv module (quoting where a cell needs it).

    orders_files.py SCHEMA.avsc OUT.avro OUT.csv < orders.jsonl
"""
import csv
import datetime
import json
import sys

import avro.datafile
import avro.io
import avro.schema

schema_file, avro_out, csv_out = sys.argv[1:4]
schema = avro.schema.parse(open(schema_file).read())
orders = [json.loads(l) for l in sys.stdin.read().splitlines() if l.strip()]

with open(avro_out, "wb") as f:
    w = avro.datafile.DataFileWriter(f, avro.io.DatumWriter(), schema, codec="deflate")
    for o in orders:
        ts = datetime.datetime.strptime(o["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        w.append({"order_id": o["order_id"], "card": o.get("card"), "user_id": o["user_id"],
                  "amount": float(o["amount"]), "ts": ts})
    w.close()

with open(csv_out, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["order_id", "card", "user_id", "amount", "ts", "note"])
    for i, o in enumerate(orders):
        w.writerow([o["order_id"], o["card"], o["user_id"], o["amount"], o["ts"],
                    'a "quoted", note\nover two lines' if i % 7 == 0 else ""])
