package weir

// The kinds of sources and outputs weir ships as registrations (package
// plan), linked here so that ReadKind and SinkToKind find them by name,
// with the settings a job file gives them.
import (
	_ "github.com/weirstream/weir/connector/mqtt"    // source: {mqtt: {...}}
	_ "github.com/weirstream/weir/connector/parquet" // output: {parquet: {...}}
	_ "github.com/weirstream/weir/connector/webhook" // output: {webhook: {...}}
)
