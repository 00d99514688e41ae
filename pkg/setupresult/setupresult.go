// Package setupresult is what a command that sets things up reports of
// each thing it made or found: dlq setup (pkg/dlq) and events record
// (pkg/events) list their streams and consumers in one shape, the same
// table and the same JSON.
//
// It is a leaf: it imports nothing of jetctl's.
package setupresult

// Resource is one thing a setup created, found, changed or adopted.
type Resource struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Action string `json:"action"`
	Detail string `json:"detail"`
}

// Actions of a Resource; the "would" ones are a dry run's.
const (
	ActionCreated     = "created"
	ActionExists      = "exists"
	ActionUpdated     = "updated"
	ActionAdopted     = "adopted"
	ActionWouldCreate = "would create"
	ActionWouldUpdate = "would update"
	ActionWouldAdopt  = "would adopt"
)
