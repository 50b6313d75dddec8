package weir

// The kinds of outputs weir itself registers in package plan: a Go program
// writes to them by name with SinkToKind, with the settings a job file
// gives them (output: {webhook: {...}}).
import _ "github.com/weirstream/weir/connector/webhook"
