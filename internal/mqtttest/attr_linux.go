package mqtttest

import "syscall"

// procAttr makes the broker die with this process.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
