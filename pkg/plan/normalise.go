package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Server defaults that normalisation fills in (nats-server's
// checkStreamCfg and setConsumerConfigDefaults).
const (
	defaultDuplicateWindow = 2 * time.Minute
	defaultAckWait         = 30 * time.Second
	defaultMaxAckPending   = 1000
	defaultMaxWaiting      = 512
	defaultPinnedTTL       = 2 * time.Minute
	flowControlHeartbeat   = time.Second
)

// thresholdKeyPrefix prefixes a consumer's own health thresholds
// (pkg/consumer's MetaThresholdPrefix): the user's settings, under
// jetctl's prefix but not its bookkeeping.
const thresholdKeyPrefix = "io.jetctl.check."

// cleanMetadata drops what the server adds (_nats.*) and jetctl's own
// bookkeeping keys (io.jetctl.*, and the state a migration in progress
// keeps on its streams), so that neither shows up as a difference. The
// health thresholds (io.jetctl.check.*) stay: they are declared.
func cleanMetadata(m map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		bookkeeping := strings.HasPrefix(k, "io.jetctl.") && !strings.HasPrefix(k, thresholdKeyPrefix)
		if strings.HasPrefix(k, "_nats.") || bookkeeping || k == migrateStateKey {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

func sortedCopy(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// normaliseStream fills the defaults the server fills, so that a declared
// config compares equal to what the server stores for it.
func normaliseStream(c jetstream.StreamConfig) jetstream.StreamConfig {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	for _, p := range []*int64{&c.MaxMsgs, &c.MaxMsgsPerSubject, &c.MaxBytes} {
		if *p == 0 || *p < -1 {
			*p = -1
		}
	}
	if c.MaxMsgSize == 0 || c.MaxMsgSize < -1 {
		c.MaxMsgSize = -1
	}
	if c.MaxConsumers == 0 || c.MaxConsumers < -1 {
		c.MaxConsumers = -1
	}
	if c.Duplicates == 0 && c.Mirror == nil && len(c.Sources) == 0 {
		c.Duplicates = defaultDuplicateWindow
		if c.MaxAge != 0 && c.MaxAge < c.Duplicates {
			c.Duplicates = c.MaxAge
		}
	}
	if c.SubjectDeleteMarkerTTL > 0 {
		c.AllowMsgTTL = true
		if !c.AllowRollup {
			c.AllowRollup, c.DenyPurge = true, false
		}
	}
	if c.AllowMsgSchedules && !c.AllowRollup {
		c.AllowRollup, c.DenyPurge = true, false
	}
	if c.Sealed {
		c.MaxAge = 0
		c.Discard = jetstream.DiscardNew
		c.DenyDelete, c.DenyPurge = true, true
		c.AllowRollup = false
	}
	if len(c.Subjects) == 0 && c.Mirror == nil && len(c.Sources) == 0 {
		c.Subjects = []string{c.Name}
	}
	c.Subjects = sortedCopy(withoutRetrySubjects(c.Subjects, "_jetctl.retry."+c.Name+".", ""))
	c.Placement = normalisePlacement(c.Placement)
	if len(c.Sources) > 0 {
		sources := append([]*jetstream.StreamSource(nil), c.Sources...)
		sort.SliceStable(sources, func(i, j int) bool {
			if sources[i].Name != sources[j].Name {
				return sources[i].Name < sources[j].Name
			}
			return sources[i].FilterSubject < sources[j].FilterSubject
		})
		c.Sources = sources
	} else {
		c.Sources = nil
	}
	// The server derives mirror_direct from the origin stream.
	c.MirrorDirect = false
	c.Template = ""
	c.Metadata = cleanMetadata(c.Metadata)
	return c
}

// normaliseConsumer fills the consumer defaults; stream is the config of
// the consumer's stream, whose consumer_limits are defaults too.
func normaliseConsumer(c jetstream.ConsumerConfig, stream *jetstream.StreamConfig) jetstream.ConsumerConfig {
	if c.Name == "" {
		c.Name = c.Durable
	}
	c.Durable = c.Name
	if c.MaxDeliver == 0 || c.MaxDeliver < -1 {
		c.MaxDeliver = -1
	}
	if c.MaxWaiting < 0 {
		c.MaxWaiting = 0
	}
	if c.MaxAckPending < -1 {
		c.MaxAckPending = -1
	}
	if c.DeliverSubject == "" && c.MaxWaiting == 0 {
		c.MaxWaiting = defaultMaxWaiting
	}
	if c.AckWait == 0 && (c.AckPolicy == jetstream.AckExplicitPolicy || c.AckPolicy == jetstream.AckAllPolicy) {
		c.AckWait = defaultAckWait
	}
	if len(c.BackOff) > 0 {
		c.AckWait = c.BackOff[0]
	}
	var limits jetstream.StreamConsumerLimits
	if stream != nil {
		limits = stream.ConsumerLimits
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = limits.MaxAckPending
	}
	if c.InactiveThreshold == 0 {
		c.InactiveThreshold = limits.InactiveThreshold
	}
	if c.MaxAckPending == 0 && c.AckPolicy != jetstream.AckNonePolicy {
		c.MaxAckPending = defaultMaxAckPending
	}
	if c.PriorityPolicy == jetstream.PriorityPolicyPinned && c.PinnedTTL == 0 {
		c.PinnedTTL = defaultPinnedTTL
	}
	if c.AckPolicy == jetstream.AckFlowControlPolicy {
		c.FlowControl = true
		c.IdleHeartbeat = flowControlHeartbeat
	}
	// One filter and a list of one are the same filter.
	filters := withoutRetrySubjects(consumerFilters(&c), "_jetctl.retry.", "."+c.Name+".>")
	c.FilterSubject = ""
	c.FilterSubjects = sortedCopy(filters)
	c.PriorityGroups = sortedCopy(c.PriorityGroups)
	if c.OptStartTime != nil {
		t := c.OptStartTime.UTC()
		c.OptStartTime = &t
	}
	// Pausing is operational state, not configuration.
	c.PauseUntil = nil
	// A consumer a migration re-seated from where it was counts as having
	// the deliver policy it had (see ReseatedFromKey).
	if from, ok := reseatedFrom(&c); ok {
		c.DeliverPolicy, c.OptStartSeq = from, 0
	}
	c.Metadata = cleanMetadata(c.Metadata)
	return c
}

func normaliseKV(c jetstream.KeyValueConfig) jetstream.KeyValueConfig {
	if c.History == 0 {
		c.History = 1
	}
	if c.MaxBytes == 0 || c.MaxBytes < -1 {
		c.MaxBytes = -1
	}
	if c.MaxValueSize == 0 || c.MaxValueSize < -1 {
		c.MaxValueSize = -1
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	c.Placement = normalisePlacement(c.Placement)
	if c.Mirror != nil {
		m := *c.Mirror
		m.Name = strings.TrimPrefix(m.Name, "KV_")
		c.Mirror = &m
	}
	if len(c.Sources) > 0 {
		sources := make([]*jetstream.StreamSource, len(c.Sources))
		for i, s := range c.Sources {
			cp := *s
			cp.Name = strings.TrimPrefix(cp.Name, "KV_")
			sources[i] = &cp
		}
		sort.SliceStable(sources, func(i, j int) bool { return sources[i].Name < sources[j].Name })
		c.Sources = sources
	} else {
		c.Sources = nil
	}
	c.Metadata = cleanMetadata(c.Metadata)
	return c
}

func normaliseObjectStore(c jetstream.ObjectStoreConfig) jetstream.ObjectStoreConfig {
	if c.MaxBytes == 0 || c.MaxBytes < -1 {
		c.MaxBytes = -1
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	c.Placement = normalisePlacement(c.Placement)
	c.Metadata = cleanMetadata(c.Metadata)
	return c
}

// kvFromStream is the KV bucket config a KV_ stream represents.
func kvFromStream(s jetstream.StreamConfig) jetstream.KeyValueConfig {
	c := jetstream.KeyValueConfig{
		Bucket:         strings.TrimPrefix(s.Name, "KV_"),
		Description:    s.Description,
		MaxValueSize:   s.MaxMsgSize,
		TTL:            s.MaxAge,
		MaxBytes:       s.MaxBytes,
		Storage:        s.Storage,
		Replicas:       s.Replicas,
		Placement:      s.Placement,
		RePublish:      s.RePublish,
		Compression:    s.Compression == jetstream.S2Compression,
		LimitMarkerTTL: s.SubjectDeleteMarkerTTL,
		Metadata:       s.Metadata,
	}
	if s.MaxMsgsPerSubject > 0 && s.MaxMsgsPerSubject <= 255 {
		c.History = uint8(s.MaxMsgsPerSubject)
	}
	if s.Mirror != nil {
		m := *s.Mirror
		m.Name = strings.TrimPrefix(m.Name, "KV_")
		c.Mirror = &m
	}
	for _, src := range s.Sources {
		cp := *src
		origin := strings.TrimPrefix(cp.Name, "KV_")
		// nats.go adds the transform that renames the origin's keys.
		if len(cp.SubjectTransforms) == 1 && cp.SubjectTransforms[0].Source == "$KV."+origin+".>" && cp.SubjectTransforms[0].Destination == "$KV."+c.Bucket+".>" {
			cp.SubjectTransforms = nil
		}
		cp.Name = origin
		c.Sources = append(c.Sources, &cp)
	}
	return c
}

// objectStoreFromStream is the object store config an OBJ_ stream
// represents.
func objectStoreFromStream(s jetstream.StreamConfig) jetstream.ObjectStoreConfig {
	return jetstream.ObjectStoreConfig{
		Bucket:      strings.TrimPrefix(s.Name, "OBJ_"),
		Description: s.Description,
		TTL:         s.MaxAge,
		MaxBytes:    s.MaxBytes,
		Storage:     s.Storage,
		Replicas:    s.Replicas,
		Placement:   s.Placement,
		Compression: s.Compression == jetstream.S2Compression,
		Metadata:    s.Metadata,
	}
}

// generic is v's JSON form decoded with numbers kept exact.
func generic(v any) map[string]any {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // the jetstream config types always marshal
	}
	var out map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		panic(err)
	}
	return out
}

// view is the normalised, comparable form of a config, with the fields
// that are identity or server-derived left out.
func view(kind Kind, cfg any, stream *jetstream.StreamConfig) map[string]any {
	var g map[string]any
	switch kind {
	case KindStream:
		g = generic(normaliseStream(*cfg.(*jetstream.StreamConfig)))
		delete(g, "mirror_direct")
	case KindConsumer:
		g = generic(normaliseConsumer(*cfg.(*jetstream.ConsumerConfig), stream))
		delete(g, "durable_name")
	case KindKV:
		g = generic(normaliseKV(*cfg.(*jetstream.KeyValueConfig)))
	case KindObjectStore:
		g = generic(normaliseObjectStore(*cfg.(*jetstream.ObjectStoreConfig)))
	}
	dropEmpty(g)
	return g
}

// dropEmpty removes null and empty values, which mean the same as absent.
func dropEmpty(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case []any:
			if len(x) == 0 {
				delete(m, k)
			}
		case map[string]any:
			dropEmpty(x)
			if len(x) == 0 {
				delete(m, k)
			}
		case string:
			if x == "" {
				delete(m, k)
			}
		case bool:
			if !x {
				delete(m, k)
			}
		case json.Number:
			if x.String() == "0" {
				delete(m, k)
			}
		}
	}
}

// hashView is the short hash jetctl stores in AppliedKey.
func hashView(v map[string]any) string {
	data, _ := json.Marshal(v)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// fingerprint identifies a live config exactly (server-added metadata
// aside), for plan files.
func fingerprint(cfg any) string {
	if cfg == nil {
		return ""
	}
	g := generic(cfg)
	if md, ok := g["metadata"].(map[string]any); ok {
		for k := range md {
			if strings.HasPrefix(k, "_nats.") {
				delete(md, k)
			}
		}
	}
	data, _ := json.Marshal(g)
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:12])
}

// normalisePlacement sorts the tags and drops a placement that says
// nothing, as the server does.
func normalisePlacement(p *jetstream.Placement) *jetstream.Placement {
	if p == nil {
		return nil
	}
	cp := *p
	cp.Tags = sortedCopy(cp.Tags)
	if cp.Cluster == "" && len(cp.Tags) == 0 {
		return nil
	}
	return &cp
}
