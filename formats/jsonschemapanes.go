package formats

import (
	"encoding/json"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/weirstream/weir/plan"
)

// JSONSchemaPanes writes a job's panes as JSON records in a schema
// registry's framing (a magic byte 0, the schema's 4-byte id, the JSON),
// as the registry's JSON Schema clients read them: each record's key and
// value are the JSON a job writes to a topic (the key [key, window_start,
// window_end], the value the pane's object), framed by the ids of the
// schemas derived from the job's PaneShape and registered at start
// (Register). The value's schema requires the fields every pane has and
// types each aggregate without requiring it, so that a job that adds or
// drops an aggregate registers a backward-compatible evolution.
type JSONSchemaPanes struct {
	paneSchemas
}

// NewJSONSchemaPanes is the writer of the panes of shape to topic,
// registered in the registry reg under the subjects strategy names.
func NewJSONSchemaPanes(shape plan.PaneShape, reg *plan.Registry, topic string, strategy SubjectStrategy, log func(string)) (*JSONSchemaPanes, error) {
	ps, err := newPaneSchemas(sr.TypeJSON, shape.Job, reg, topic, strategy, log)
	if err != nil {
		return nil, err
	}
	j := &JSONSchemaPanes{paneSchemas: ps}
	j.key, j.value = jsonPaneSchemas(shape, ps.keyName, ps.valueName)
	return j, nil
}

// jsonPaneSchemas are the JSON Schemas (draft 7) of a pane's key and value
// as a job writes them.
func jsonPaneSchemas(shape plan.PaneShape, keyName, valueName string) (key, value string) {
	type prop = map[string]any
	time := prop{"type": []string{"string", "integer"}, "description": "RFC 3339, or epoch milliseconds (the job's times)"}
	keyDoc := "the key's value; for a composite key, the array of its fields' values"
	if len(shape.Keys) == 0 {
		keyDoc = "null: the job has no key"
	}
	// A composite key's fields are each a field of the pane too, named as
	// the job names them; the open content model takes them.
	props := prop{"key": prop{"description": keyDoc}}
	required := []string{"key"}
	if shape.Windowed {
		props["window_start"], props["window_end"] = time, time
		required = append(required, "window_start", "window_end")
	}
	props["revision"] = prop{"type": "integer", "minimum": 1}
	props["timing"] = prop{"enum": []string{"EARLY", "ON_TIME", "LATE"}}
	props["final"] = prop{"type": "boolean"}
	props["retract"] = prop{"type": "boolean"}
	props["status"] = prop{"enum": []string{"provisional", "closed", "retracted"}}
	props["mode"] = prop{"enum": []string{"accumulating", "discarding", "retracting"},
		"description": "whether the values are the window's totals so far or deltas since its last pane"}
	props["version"] = prop{"type": "integer"}
	props["watermark"], props["emitted_at"] = time, time
	required = append(required, "revision", "timing", "final", "retract", "status", "mode", "version", "watermark", "emitted_at")
	for _, g := range shape.Aggregates {
		switch g.Type {
		case plan.Integer:
			props[g.Name] = prop{"type": []string{"integer", "null"}}
		case plan.Number:
			props[g.Name] = prop{"type": []string{"number", "null"}}
		default:
			props[g.Name] = prop{"description": "JSON: a value, an object or an array"}
		}
	}
	props["partial"] = prop{"type": "array", "items": prop{"type": "string"},
		"description": "the aggregates whose values cover only part of the window"}
	v, _ := json.Marshal(prop{
		"$schema": "http://json-schema.org/draft-07/schema#", "title": valueName,
		"description": "A window's result, as weir writes it.",
		"type":        "object", "properties": props, "required": required,
	})
	k, _ := json.Marshal(prop{
		"$schema": "http://json-schema.org/draft-07/schema#", "title": keyName,
		"description": "A pane's key and window, [key, window_start, window_end]: what a compacted topic keeps the latest revision of.",
		"type":        "array",
	})
	return string(k), string(v)
}

// Record is a pane's JSON key and value (as the job writes them to a
// topic) as a Kafka record in the registry's framing. It needs Register
// first.
func (j *JSONSchemaPanes) Record(key, value []byte) (k, v []byte) {
	k = append(framedHeader(make([]byte, 0, 5+len(key)), j.keyID), key...)
	v = append(framedHeader(make([]byte, 0, 5+len(value)), j.valID), value...)
	return k, v
}
