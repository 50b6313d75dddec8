package job

import (
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/source"
)

// A record's fields are read once, each into a slot of its own, before the
// rules read them: from its JSON object (fillJSON), or, for a format that
// reads them from the record's bytes (linedec.Projector), straight from
// those, without an object or a text. The rules then read the slots alike.

// slotted is where a parser keeps the paths of the fields its job reads
// and a record's values of them.
type slotted struct {
	paths [][]string     // by slot: every field the rules read
	slots []source.Value // by slot: the record's
	slab  []byte         // the texts of the record's numbers
	// The slots of the key, the id, the version and the partition (-1:
	// the job reads none), a composite key's parts and the aggregates'
	// fields (lineParser.fields); the time fields are the first slots, at
	// their places in a linedec.Fields.
	sKey, sID, sVersion, sPart int
	sKeyParts, sFields         []int
}

// layout gives every field lp's job reads its slot; after lp.fields are
// known.
func (lp *lineParser) layout() {
	j := lp.j
	s := &lp.slotted
	s.paths = nil
	add := func(p []string) int {
		s.paths = append(s.paths, p)
		return len(s.paths) - 1
	}
	opt := func(p []string) int {
		if p == nil {
			return -1
		}
		return add(p)
	}
	for _, p := range lp.times.Paths() {
		add(p) // nil: a slot that stays Absent
	}
	s.sKey, s.sKeyParts = -1, nil
	if j.KeyParts != nil {
		for _, p := range j.KeyParts {
			s.sKeyParts = append(s.sKeyParts, add(p))
		}
	} else {
		s.sKey = opt(j.Key)
	}
	s.sID, s.sVersion, s.sPart = opt(j.ID), opt(j.VersionField), opt(j.PartitionField)
	s.sFields = nil
	for _, p := range lp.fields {
		s.sFields = append(s.sFields, add(p))
	}
	s.slots = make([]source.Value, len(s.paths))
}

// fork is a copy of s for another parser: the paths and slot numbers
// shared, the values its own.
func (s *slotted) fork() slotted {
	f := *s
	f.slots, f.slab = make([]source.Value, len(s.paths)), nil
	return f
}

// fillJSON reads the fields of the JSON object v into the slots.
func (s *slotted) fillJSON(v *fastjson.Value) {
	s.slab = s.slab[:0]
	source.ReadJSON(v, s.paths, s.slots, &s.slab)
}

// timeFields are the record's values of its time fields, in the slots.
func (s *slotted) timeFields() *linedec.Fields {
	return (*linedec.Fields)(s.slots)
}
