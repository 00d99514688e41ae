package plan

import (
	"reflect"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// moveOrScaleFirst picks the cheaper half of a move-and-scale to send first:
// the move when scaling up, the scale when scaling down; and nothing when
// the update does not move to a new placement.
func TestMoveOrScaleFirst(t *testing.T) {
	east := &jetstream.Placement{Cluster: "east"}
	west := &jetstream.Placement{Cluster: "west"}
	live := &Live{Streams: map[string]*jetstream.StreamInfo{
		"R1":     {Config: jetstream.StreamConfig{Name: "R1", Replicas: 1, Placement: east, Subjects: []string{"a"}}},
		"R3":     {Config: jetstream.StreamConfig{Name: "R3", Replicas: 3, Placement: east}},
		"KV_cfg": {Config: jetstream.StreamConfig{Name: "KV_cfg", Replicas: 1}},
	}}
	both := []FieldChange{{Path: "num_replicas"}, {Path: "placement.cluster"}}
	stream := func(name string, replicas int, p *jetstream.Placement) *Resource {
		return &Resource{Kind: KindStream, Name: name, StreamConfig: &jetstream.StreamConfig{Name: name, Replicas: replicas, Placement: p}}
	}
	for _, tt := range []struct {
		name    string
		r       *Resource
		changes []FieldChange
		want    *jetstream.StreamConfig
	}{
		{"scale up: move first", stream("R1", 3, west), both,
			&jetstream.StreamConfig{Name: "R1", Replicas: 1, Placement: west, Subjects: []string{"a"}}},
		{"scale down: scale first", stream("R3", 1, west), both,
			&jetstream.StreamConfig{Name: "R3", Replicas: 1, Placement: east}},
		{"bucket", &Resource{Kind: KindKV, Name: "cfg", KeyValueConfig: &jetstream.KeyValueConfig{Bucket: "cfg", Replicas: 3, Placement: west}}, both,
			&jetstream.StreamConfig{Name: "KV_cfg", Replicas: 1, Placement: west}},
		{"placement dropped: one update", stream("R3", 1, nil), both, nil},
		{"only the replicas", stream("R1", 3, east), []FieldChange{{Path: "num_replicas"}}, nil},
		{"only the placement", stream("R1", 1, west), []FieldChange{{Path: "placement.cluster"}}, nil},
	} {
		rp := &ResourcePlan{Kind: tt.r.Kind, Name: tt.r.Name, Action: ActionUpdate, Changes: tt.changes, res: tt.r}
		got := moveOrScaleFirst(rp, tt.r, live)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: first update %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
