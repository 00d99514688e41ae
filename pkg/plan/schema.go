package plan

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// field is one field of a config struct, named by its JSON tag: the
// server's field name, which is also the plan file's.
type field struct {
	Name  string
	Index int
	Type  reflect.Type
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	timePtrType  = reflect.TypeOf(&time.Time{})

	streamConfigType   = reflect.TypeOf(jetstream.StreamConfig{})
	consumerConfigType = reflect.TypeOf(jetstream.ConsumerConfig{})
	kvConfigType       = reflect.TypeOf(jetstream.KeyValueConfig{})
	objectConfigType   = reflect.TypeOf(jetstream.ObjectStoreConfig{})
)

// enumValues are the values each enum type accepts, as the server writes
// them.
var enumValues = map[reflect.Type][]string{
	reflect.TypeOf(jetstream.RetentionPolicy(0)):  {"limits", "interest", "workqueue"},
	reflect.TypeOf(jetstream.DiscardPolicy(0)):    {"old", "new"},
	reflect.TypeOf(jetstream.StorageType(0)):      {"file", "memory"},
	reflect.TypeOf(jetstream.StoreCompression(0)): {"none", "s2"},
	reflect.TypeOf(jetstream.PersistModeType(0)):  {"default", "async"},
	reflect.TypeOf(jetstream.DeliverPolicy(0)):    {"all", "last", "new", "by_start_sequence", "by_start_time", "last_per_subject"},
	reflect.TypeOf(jetstream.AckPolicy(0)):        {"explicit", "all", "none", "flow_control"},
	reflect.TypeOf(jetstream.ReplayPolicy(0)):     {"instant", "original"},
	reflect.TypeOf(jetstream.PriorityPolicy(0)):   {"", "pinned_client", "overflow", "prioritized"},
}

// sizeFields are the integer fields that take sizes ("1GiB"), per
// config type.
var sizeFields = map[reflect.Type]map[string]bool{
	streamConfigType:   {"max_bytes": true, "max_msg_size": true},
	consumerConfigType: {"max_bytes": true},
	kvConfigType:       {"max_bytes": true, "max_value_size": true},
	objectConfigType:   {"max_bytes": true},
}

// ignoredFields exist in the Go types but are not configuration a plan
// file declares.
var ignoredFields = map[reflect.Type]map[string]bool{
	streamConfigType:   {"template_owner": true},
	consumerConfigType: {},
}

// fieldsOf lists t's JSON fields in declaration order. The list is
// shared: do not modify it.
func fieldsOf(t reflect.Type) []field { return fieldSetOf(t).list }

// fieldSet is a struct type's JSON fields, in order and by name.
type fieldSet struct {
	list   []field
	byName map[string]field
}

// fieldSets caches each type's fieldSet: the loader asks for it for every
// mapping it reads.
var fieldSets sync.Map // reflect.Type -> *fieldSet

func fieldSetOf(t reflect.Type) *fieldSet {
	if fs, ok := fieldSets.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{byName: map[string]field{}}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" || name == "" || ignoredFields[t][name] {
			continue
		}
		f := field{Name: name, Index: i, Type: sf.Type}
		fs.list = append(fs.list, f)
		fs.byName[name] = f
	}
	fs.list = slices.Clip(fs.list)
	actual, _ := fieldSets.LoadOrStore(t, fs)
	return actual.(*fieldSet)
}

func fieldNames(fields []field, extra ...string) []string {
	names := append([]string(nil), extra...)
	for _, f := range fields {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	return names
}
