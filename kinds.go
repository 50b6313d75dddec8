package weir

// The kinds of sources and outputs weir ships as registrations (package
// plan), linked here so that ReadKind and SinkToKind find them by name.
import (
	_ "github.com/weirstream/weir/connector/mqtt" // source: {mqtt: {...}}
)
