package weir

// stateFormat is the version of the JSON state codec's encoding of an
// aggregation's windows, recorded in the pipeline's shape.
const stateFormat = 1
