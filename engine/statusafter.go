package engine

// StatusAfterRun is the job's status once Run has returned, as the source
// loop would have reported it at the end: what was read, the watermarks,
// the sinks and the last checkpoint (the console of a job whose input
// ended goes on showing it). Call it only after Run returned: nothing runs
// then that the report reads.
func (e *Engine) StatusAfterRun() Status {
	s := e.makeStatus()
	s.State = "stopped"
	return s
}
