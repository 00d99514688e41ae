package plan

import (
	"sort"

	"github.com/jetctl/jetctl/pkg/jsapi"
)

// streamNames are the live streams' names, sorted.
func (l *Live) streamNames() []string {
	names := make([]string, 0, len(l.Streams))
	for name := range l.Streams {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Resources are the live streams, consumers, KV buckets and object stores
// as declared resources (without positions), in name order, so that what
// checks declared resources can check the server's. The consumers through
// which a mirror or a sourcing stream reads a stream are the server's,
// not configuration: they are left out.
func (l *Live) Resources() *Desired {
	d := &Desired{}
	for _, name := range l.streamNames() {
		si := l.Streams[name]
		kind, short := kindOfStream(name)
		r := &Resource{Kind: kind, Name: short}
		switch kind {
		case KindKV:
			c := kvFromStream(si.Config)
			r.KeyValueConfig = &c
		case KindObjectStore:
			c := objectStoreFromStream(si.Config)
			r.ObjectStoreConfig = &c
		default:
			c := si.Config
			r.StreamConfig = &c
		}
		d.Resources = append(d.Resources, r)
		consumers := make([]string, 0, len(l.Consumers[name]))
		for c, ci := range l.Consumers[name] {
			if !jsapi.ReplicationConsumer(ci.Config.Metadata) {
				consumers = append(consumers, c)
			}
		}
		sort.Strings(consumers)
		for _, c := range consumers {
			cfg := l.Consumers[name][c].Config
			d.Resources = append(d.Resources, &Resource{Kind: KindConsumer, Stream: name, Name: c, ConsumerConfig: &cfg})
		}
	}
	return d
}
