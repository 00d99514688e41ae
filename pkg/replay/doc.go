// Package replay hands the messages of a stream range (read through
// pkg/streamread) or of a dump file to a sink: JSON lines, a file, or a
// republisher that is idempotent and resumable.
package replay
