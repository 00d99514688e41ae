// Package replay hands the messages of a stream range (read through
// pkg/streamread) or of a dump file to a sink: JSON lines, a file, or a
// republisher that is idempotent and resumable. Run is its one entry
// point: it owns the checkpoint (load, resume, save), the dry run's counts
// and the failure detail; a command builds a Config and renders the
// Summary.
package replay
