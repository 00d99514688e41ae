package jsapi

import "strings"

// The metadata the server writes on what it creates and owns, named in
// one place (nats-server 2.15 server/stream.go, jetstream_versioning.go).
const (
	// MetaMirrorPrefix starts the metadata keys of the consumer through
	// which a mirror reads its origin (_nats.mirror.stream, .acc, .domain).
	MetaMirrorPrefix = "_nats.mirror."
	// MetaSourcePrefix starts the metadata keys of the consumer through
	// which a sourcing stream reads one of its sources (_nats.src.stream,
	// .acc, .domain). Servers before 2.11 wrote none; none wrote
	// "_nats.source.", which jetctl once looked for.
	MetaSourcePrefix = "_nats.src."
	// MetaServerLevel, MetaServerVersion and MetaRequiredLevel are the API
	// level and version of the server that stored a config, and the API
	// level the config needs.
	MetaServerLevel   = "_nats.level"
	MetaServerVersion = "_nats.ver"
	MetaRequiredLevel = "_nats.req.level"
)

// ReplicationConsumer says whether a consumer with metadata md is the
// server's own: the one through which a mirror or a sourcing stream
// reads this stream (see ReplicationTarget). Such a consumer is
// replication, not a user's: it is never re-seated, exported, pruned or
// judged like one.
func ReplicationConsumer(md map[string]string) bool {
	for k := range md {
		if strings.HasPrefix(k, MetaMirrorPrefix) || strings.HasPrefix(k, MetaSourcePrefix) {
			return true
		}
	}
	return false
}

// ReplicationTarget is the stream that reads through a replication
// consumer with metadata md, and whether it is a mirror ("" when md is
// not a replication consumer's).
func ReplicationTarget(md map[string]string) (stream string, mirror bool) {
	if s, ok := md[MetaMirrorPrefix+"stream"]; ok {
		return s, true
	}
	return md[MetaSourcePrefix+"stream"], false
}
