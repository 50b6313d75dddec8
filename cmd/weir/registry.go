package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"github.com/valyala/fastjson"
	"google.golang.org/protobuf/encoding/protowire"
)

// The development broker's schema registry (weir kafka --registry PORT):
// franz-go's in-memory registry, the REST subset the common clients use
// (subjects, versions, schemas by id, compatibility), on 127.0.0.1. With
// --orders the orders are produced as Avro in the registry's framing, their
// schema registered as orders-value, for source: {kafka: ..., format: avro,
// registry: {url: ...}} (examples/fraud/kafka-avro.yaml); with --format
// protobuf or json_schema, as Protobuf or as JSON validated by a JSON
// Schema, in the same framing.

// ordersAvroSchema is the orders' schema in the registry: the times
// timestamp-millis, the amount a decimal of scale 2.
const ordersAvroSchema = `{"type":"record","name":"Order","namespace":"steep","fields":[
 {"name":"order_id","type":"string"},
 {"name":"card","type":"string"},
 {"name":"user_id","type":"string"},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"arrival","type":{"type":"long","logicalType":"timestamp-millis"}}]}`

// serveRegistry serves a schema registry on 127.0.0.1:port until close.
func serveRegistry(port int) (url string, reg *srfake.Registry, close func(), err error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return "", nil, nil, err
	}
	reg = srfake.NewRegistry(srfake.WithGlobalCompat(sr.CompatBackward))
	srv := &http.Server{Handler: reg.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), reg, func() { srv.Close() }, nil
}

// avroOrders encodes the orders as Avro, framed with their schema's id.
type avroOrders struct {
	id     int
	schema *avro.Schema
}

// newAvroOrders registers the orders' schema as orders-value.
func newAvroOrders(reg *srfake.Registry) (*avroOrders, error) {
	id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: ordersAvroSchema, Type: sr.TypeAvro})
	if err != nil {
		return nil, err
	}
	return &avroOrders{id: id, schema: avro.MustParse(ordersAvroSchema)}, nil
}

// encode is the order v as Avro in the registry's framing.
func (a *avroOrders) encode(v *fastjson.Value) ([]byte, error) {
	at := func(f string) time.Time {
		t, _ := time.Parse(time.RFC3339Nano, string(v.GetStringBytes(f)))
		return t
	}
	b := make([]byte, 5, 96)
	binary.BigEndian.PutUint32(b[1:], uint32(a.id))
	return a.schema.AppendEncode(b, map[string]any{
		"order_id": string(v.GetStringBytes("order_id")), "card": string(v.GetStringBytes("card")),
		"user_id": string(v.GetStringBytes("user_id")), "amount": v.Get("amount").String(),
		"ts": at("ts"), "arrival": at("arrival"),
	})
}

// ordersProto is examples/fraud/orders.proto, the orders' Protobuf schema
// in the registry with --format protobuf.
const ordersProto = `// The orders of the fraud example as Protobuf messages, for
// kafka-protobuf.yaml: the fields of orders.jsonl, their times
// google.protobuf.Timestamp. weir compiles it when the job starts (no
// generated code); a producer generates its classes from it (protoc
// --python_out, --java_out, ...).
syntax = "proto3";

package shop;

import "google/protobuf/timestamp.proto";

message Order {
  string order_id = 1;
  string card = 2;
  string user_id = 3;
  double amount = 4;
  google.protobuf.Timestamp ts = 5;
  google.protobuf.Timestamp arrival = 6;
}
`

// protoOrders encodes the orders as shop.Order messages, framed with their
// schema's id and the first message's index.
type protoOrders struct{ id int }

// newProtoOrders registers orders.proto as orders-value.
func newProtoOrders(reg *srfake.Registry) (*protoOrders, error) {
	id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: ordersProto, Type: sr.TypeProtobuf})
	if err != nil {
		return nil, err
	}
	return &protoOrders{id: id}, nil
}

// encode is the order v as a shop.Order in the registry's framing, its
// fields numbered as in orders.proto.
func (p *protoOrders) encode(v *fastjson.Value) ([]byte, error) {
	b := make([]byte, 6, 112)
	binary.BigEndian.PutUint32(b[1:], uint32(p.id))
	for i, f := range []string{"order_id", "card", "user_id"} {
		b = protowire.AppendTag(b, protowire.Number(i+1), protowire.BytesType)
		b = protowire.AppendBytes(b, v.GetStringBytes(f))
	}
	amount, err := strconv.ParseFloat(v.Get("amount").String(), 64)
	if err != nil {
		return nil, err
	}
	b = protowire.AppendTag(b, 4, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(amount))
	for i, f := range []string{"ts", "arrival"} {
		t, err := time.Parse(time.RFC3339Nano, string(v.GetStringBytes(f)))
		if err != nil {
			return nil, err
		}
		var ts []byte
		ts = protowire.AppendTag(ts, 1, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(t.Unix()))
		ts = protowire.AppendTag(ts, 2, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(t.Nanosecond()))
		b = protowire.AppendTag(b, protowire.Number(i+5), protowire.BytesType)
		b = protowire.AppendBytes(b, ts)
	}
	return b, nil
}

// ordersJSONSchema is examples/fraud/orders.schema.json, the orders' JSON
// Schema in the registry with --format json_schema.
const ordersJSONSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "Order",
  "description": "An order of the fraud example (orders.jsonl), for kafka-json-schema.yaml: its times in RFC 3339, its amount in euros.",
  "type": "object",
  "properties": {
    "order_id": {"type": "string"},
    "card": {"type": "string"},
    "user_id": {"type": "string"},
    "amount": {"type": "number", "minimum": 0},
    "ts": {"type": "string", "format": "date-time"},
    "arrival": {"type": "string", "format": "date-time"}
  },
  "required": ["order_id", "card", "user_id", "amount", "ts"]
}
`

// jsonSchemaOrders frames the orders' JSON lines with their JSON Schema's
// id, as Confluent's JSONSerializer does.
type jsonSchemaOrders struct{ id int }

// newJSONSchemaOrders registers orders.schema.json as orders-value.
func newJSONSchemaOrders(reg *srfake.Registry) (*jsonSchemaOrders, error) {
	id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: ordersJSONSchema, Type: sr.TypeJSON})
	if err != nil {
		return nil, err
	}
	return &jsonSchemaOrders{id: id}, nil
}

// encode is the order v, a JSON line, in the registry's framing.
func (j *jsonSchemaOrders) encode(v *fastjson.Value) ([]byte, error) {
	b := make([]byte, 5, 192)
	binary.BigEndian.PutUint32(b[1:], uint32(j.id))
	return v.MarshalTo(b), nil
}
