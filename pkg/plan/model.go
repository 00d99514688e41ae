// Package plan is jetctl's declarative model of JetStream resources: it
// loads and validates plan files, reads the live server, normalises both,
// computes a terraform-style plan and applies it. It prints nothing and
// knows nothing of cobra or terminals.
package plan

import (
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Kind is a resource kind, as it appears in plans and messages.
type Kind string

// Resource kinds.
const (
	KindStream      Kind = "stream"
	KindConsumer    Kind = "consumer"
	KindKV          Kind = "kv"
	KindObjectStore Kind = "object_store"
)

// Metadata keys jetctl writes on the resources it creates and updates.
const (
	// ManagedKey marks a resource created by jetctl; only marked resources
	// are deleted by apply --prune.
	ManagedKey = "io.jetctl.managed"
	// AppliedKey holds a hash of the normalised configuration jetctl last
	// applied, so that plan can report changes made outside jetctl.
	AppliedKey = "io.jetctl.applied"
)

// Pos is a position in a plan file.
type Pos struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

func (p Pos) String() string {
	if p.File == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

// Resource is one declared resource: exactly one of the config pointers
// is set, according to Kind.
type Resource struct {
	Kind Kind
	// Name is the stream, consumer, bucket or object store name.
	Name string
	// Stream is the stream a consumer belongs to.
	Stream string

	StreamConfig      *jetstream.StreamConfig
	ConsumerConfig    *jetstream.ConsumerConfig
	KeyValueConfig    *jetstream.KeyValueConfig
	ObjectStoreConfig *jetstream.ObjectStoreConfig

	// Pos is where the resource is declared; FieldPos where each of its
	// fields is (keyed by JSON path, e.g. "subjects[1]", "placement.cluster").
	Pos      Pos
	FieldPos map[string]Pos

	// Ignores are the `# jetctl:ignore RULE reason` comments on the
	// resource: lint findings it silences on purpose.
	Ignores []Ignore
}

// Ignore is one `# jetctl:ignore RULE reason` comment.
type Ignore struct {
	Rule   string
	Reason string
	Pos    Pos
}

// ID names the resource uniquely: "stream ORDERS", "consumer ORDERS/ship".
func (r *Resource) ID() string { return resourceID(r.Kind, r.Stream, r.Name) }

func resourceID(kind Kind, stream, name string) string {
	if kind == KindConsumer {
		return fmt.Sprintf("%s %s/%s", kind, stream, name)
	}
	return fmt.Sprintf("%s %s", kind, name)
}

// Label is the resource as errors name it: `stream "ORDERS"`,
// `stream "ORDERS": consumer "ship"`.
func (r *Resource) Label() string { return resourceLabel(r.Kind, r.Stream, r.Name) }

func resourceLabel(kind Kind, stream, name string) string {
	switch kind {
	case KindConsumer:
		return fmt.Sprintf("stream %q: consumer %q", stream, name)
	case KindKV:
		return fmt.Sprintf("kv bucket %q", name)
	case KindObjectStore:
		return fmt.Sprintf("object store %q", name)
	}
	return fmt.Sprintf("stream %q", name)
}

// StreamName is the name of the stream behind the resource (KV_x for a
// bucket, OBJ_x for an object store).
func (r *Resource) StreamName() string { return streamNameOf(r.Kind, r.Stream, r.Name) }

func streamNameOf(kind Kind, stream, name string) string {
	switch kind {
	case KindKV:
		return "KV_" + name
	case KindObjectStore:
		return "OBJ_" + name
	case KindConsumer:
		return stream
	}
	return name
}

// config returns the typed config.
func (r *Resource) config() any {
	switch r.Kind {
	case KindStream:
		return r.StreamConfig
	case KindConsumer:
		return r.ConsumerConfig
	case KindKV:
		return r.KeyValueConfig
	case KindObjectStore:
		return r.ObjectStoreConfig
	}
	return nil
}

// replicasAndPlacement are the declared replicas and placement of a
// stream, bucket or object store.
func (r *Resource) replicasAndPlacement() (int, *jetstream.Placement) {
	switch r.Kind {
	case KindStream:
		return r.StreamConfig.Replicas, r.StreamConfig.Placement
	case KindKV:
		return r.KeyValueConfig.Replicas, r.KeyValueConfig.Placement
	case KindObjectStore:
		return r.ObjectStoreConfig.Replicas, r.ObjectStoreConfig.Placement
	}
	return 0, nil
}

// Desired is everything the plan files declare.
type Desired struct {
	Resources []*Resource
	// Files are the files that were read, in order.
	Files []string
	// StrayIgnores are the `# jetctl:ignore` comments on no resource
	// (above a top-level key, after a list's last item at the list's
	// indentation): lint reports them, as they silence nothing.
	StrayIgnores []Ignore
}

// find returns the declared resource with that identity.
func (d *Desired) find(kind Kind, stream, name string) *Resource {
	for _, r := range d.Resources {
		if r.Kind == kind && r.Name == name && (kind != KindConsumer || r.Stream == stream) {
			return r
		}
	}
	return nil
}
