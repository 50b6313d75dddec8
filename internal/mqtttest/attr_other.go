//go:build !linux

package mqtttest

import "syscall"

// procAttr is nothing where a child cannot be told to die with its parent:
// the tests stop their brokers themselves.
func procAttr() *syscall.SysProcAttr { return nil }
