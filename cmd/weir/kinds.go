package main

// The kinds of sources and outputs weir ships as registrations (package
// plan), linked here so that job files name them.
import (
	_ "github.com/weirstream/weir/connector/mqtt" // source: {mqtt: {...}}
)
