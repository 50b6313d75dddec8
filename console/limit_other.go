//go:build !unix

package console

// fileLimit is the process's limit of open files: not known here.
func fileLimit() int { return 0 }
