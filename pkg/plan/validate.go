package plan

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/streamread"
	"github.com/jetctl/jetctl/pkg/units"
)

var bucketNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// at is the position of a field of r, or of r itself.
func (r *Resource) at(path string) Pos {
	if p, ok := r.FieldPos[path]; ok {
		return p
	}
	return r.Pos
}

// validAssetName reports whether a stream or consumer name is one the
// server accepts.
func validAssetName(name string) bool {
	if name == "" || len(name) > 255 {
		return false
	}
	return !strings.ContainsAny(name, ".*>\\/ \t\r\n")
}

// validSubject reports whether s is a valid subject or subject filter.
func validSubject(s string) bool { return streamread.ValidateSubject(s) == nil }

// subjectsCollide reports whether some subject matches both filters.
func subjectsCollide(a, b string) bool { return streamread.SubjectsOverlap(a, b) }

// subjectSubset reports whether every subject matching filter matches
// subject.
func subjectSubset(filter, subject string) bool {
	ft, st := strings.Split(filter, "."), strings.Split(subject, ".")
	for i := range ft {
		if i >= len(st) {
			return false
		}
		switch {
		case st[i] == ">":
			return true
		case ft[i] == ">":
			return false
		case st[i] == "*":
		case ft[i] == "*" || ft[i] != st[i]:
			return false
		}
	}
	return len(ft) == len(st)
}

// streamSubjects are the subjects a declared stream will listen on.
func streamSubjects(r *Resource) []string {
	switch r.Kind {
	case KindKV:
		return []string{"$KV." + r.Name + ".>"}
	case KindObjectStore:
		return []string{"$O." + r.Name + ".C.>", "$O." + r.Name + ".M.>"}
	case KindStream:
		c := r.StreamConfig
		if len(c.Subjects) == 0 && c.Mirror == nil && len(c.Sources) == 0 {
			return []string{c.Name}
		}
		return c.Subjects
	}
	return nil
}

func consumerFilters(c *jetstream.ConsumerConfig) []string {
	if c.FilterSubject != "" {
		return append([]string{c.FilterSubject}, c.FilterSubjects...)
	}
	return c.FilterSubjects
}

func (l *loader) validate() {
	seen := map[string]*Resource{}
	streamNames := map[string]*Resource{}
	for _, r := range l.desired.Resources {
		if first, dup := seen[r.ID()]; dup {
			l.problemAt(r.Pos, "%s is declared twice (first at %s)", r.Label(), first.Pos)
			continue
		}
		seen[r.ID()] = r
		if r.Kind != KindConsumer {
			if first, dup := streamNames[r.StreamName()]; dup {
				l.problemAt(r.Pos, "%s uses stream name %q, as does %s at %s", r.Label(), r.StreamName(), first.Label(), first.Pos)
			} else {
				streamNames[r.StreamName()] = r
			}
		}
		if r.Kind == KindConsumer {
			l.checkReplicas(r, r.ConsumerConfig.Replicas)
		} else {
			replicas, _ := r.replicasAndPlacement()
			l.checkReplicas(r, replicas)
		}
		switch r.Kind {
		case KindStream:
			l.validateStream(r)
		case KindConsumer:
			l.validateConsumer(r, streamNames[r.Stream])
		case KindKV:
			if !bucketNameRe.MatchString(r.Name) {
				l.problemAt(r.at("bucket"), "%s: invalid bucket name: use letters, digits, _ and -", r.Label())
			}
			if r.KeyValueConfig.History > jetstream.KeyValueMaxHistory {
				l.problemAt(r.at("history"), "%s: history: at most %d, got %d", r.Label(), jetstream.KeyValueMaxHistory, r.KeyValueConfig.History)
			}
		case KindObjectStore:
			if !bucketNameRe.MatchString(r.Name) {
				l.problemAt(r.at("bucket"), "%s: invalid object store name: use letters, digits, _ and -", r.Label())
			}
		}
	}
	l.validateOverlaps()
	l.validateWorkQueues(streamNames)
}

// checkReplicas reports replicas the server refuses whatever its size.
func (l *loader) checkReplicas(r *Resource, replicas int) {
	switch {
	case replicas < 0:
		l.problemAt(r.at("num_replicas"), "%s: num_replicas: cannot be negative, got %d", r.Label(), replicas)
	case replicas > maxReplicas:
		l.problemAt(r.at("num_replicas"), "%s: num_replicas: %d, but the server keeps at most %d", r.Label(), replicas, maxReplicas)
	}
}

func (l *loader) checkSubject(r *Resource, path, subject string) {
	if subject != "" && !validSubject(subject) {
		l.problemAt(r.at(path), "%s: %s: invalid subject %q", r.Label(), path, subject)
	}
}

func (l *loader) validateStream(r *Resource) {
	c := r.StreamConfig
	if !validAssetName(c.Name) {
		l.problemAt(r.at("name"), "%s: invalid stream name: it must not contain '.', '*', '>', '/', '\\' or spaces", r.Label())
	}
	for i, s := range c.Subjects {
		p := fmt.Sprintf("subjects[%d]", i)
		if !validSubject(s) {
			l.problemAt(r.at(p), "%s: %s: invalid subject %q", r.Label(), p, s)
		}
		for j := 0; j < i; j++ {
			if c.Subjects[j] == s {
				l.problemAt(r.at(p), "%s: subject %q is listed twice", r.Label(), s)
			}
		}
	}
	if c.Mirror != nil {
		if c.Mirror.Name == "" {
			l.problemAt(r.at("mirror"), "%s: mirror: name is required", r.Label())
		}
		l.checkSubject(r, "mirror.filter_subject", c.Mirror.FilterSubject)
	}
	for i, s := range c.Sources {
		p := fmt.Sprintf("sources[%d]", i)
		if s == nil || s.Name == "" {
			l.problemAt(r.at(p), "%s: %s: name is required", r.Label(), p)
			continue
		}
		l.checkSubject(r, p+".filter_subject", s.FilterSubject)
	}
	if c.RePublish != nil {
		l.checkSubject(r, "republish.src", c.RePublish.Source)
		if c.RePublish.Destination == "" {
			l.problemAt(r.at("republish"), "%s: republish: dest is required", r.Label())
		}
		l.checkSubject(r, "republish.dest", c.RePublish.Destination)
	}
	if c.SubjectTransform != nil {
		l.checkSubject(r, "subject_transform.src", c.SubjectTransform.Source)
	}
	if c.MaxAge != 0 && c.Duplicates > c.MaxAge {
		l.problemAt(r.at("duplicate_window"), "%s: duplicate_window (%s) cannot be longer than max_age (%s)", r.Label(), units.FormatDuration(c.Duplicates), units.FormatDuration(c.MaxAge))
	}
	for _, rule := range refusedBy(streamRefusals, c) {
		l.problemAt(r.at(rule.Path), "%s: %s", r.Label(), rule.Message)
	}
}

func (l *loader) validateConsumer(r *Resource, stream *Resource) {
	c := r.ConsumerConfig
	field := "name"
	if _, ok := r.FieldPos["name"]; !ok {
		field = "durable_name"
	}
	if !validAssetName(r.Name) {
		l.problemAt(r.at(field), "%s: invalid consumer name: it must not contain '.', '*', '>', '/', '\\' or spaces", r.Label())
	}
	if !validAssetName(r.Stream) {
		l.problemAt(r.at("stream"), "%s: invalid stream name", r.Label())
	}
	l.checkSubject(r, "filter_subject", c.FilterSubject)
	for i, s := range c.FilterSubjects {
		l.checkSubject(r, fmt.Sprintf("filter_subjects[%d]", i), s)
	}
	if c.FilterSubject != "" && len(c.FilterSubjects) > 0 {
		l.problemAt(r.at("filter_subjects"), "%s: give filter_subject or filter_subjects, not both", r.Label())
	}
	switch c.DeliverPolicy {
	case jetstream.DeliverByStartSequencePolicy:
		if c.OptStartSeq == 0 {
			l.problemAt(r.at("deliver_policy"), "%s: deliver_policy by_start_sequence needs opt_start_seq", r.Label())
		}
	case jetstream.DeliverByStartTimePolicy:
		if c.OptStartTime == nil {
			l.problemAt(r.at("deliver_policy"), "%s: deliver_policy by_start_time needs opt_start_time", r.Label())
		}
	}
	if c.DeliverGroup != "" && c.DeliverSubject == "" {
		l.problemAt(r.at("deliver_group"), "%s: deliver_group needs deliver_subject", r.Label())
	}
	for _, rule := range refusedBy(consumerRefusals, c) {
		l.problemAt(r.at(rule.Path), "%s: %s", r.Label(), rule.Message)
	}
	if stream == nil || stream.Kind != KindStream {
		return
	}
	// The rules of the stream's retention and replicas; for a stream only
	// on the server, planning checks them (CheckServer).
	for _, fp := range consumerRules(stream.StreamConfig, c) {
		l.problems = append(l.problems, Problem{Pos: r.at(fp.path), Message: r.Label() + ": " + fp.msg, Rule: fp.rule})
	}
	if stream.StreamConfig.Mirror != nil || len(stream.StreamConfig.Sources) > 0 {
		return
	}
	subjects := streamSubjects(stream)
	for i, f := range consumerFilters(c) {
		if !validSubject(f) {
			continue
		}
		inside := false
		for _, s := range subjects {
			if subjectSubset(f, s) {
				inside = true
				break
			}
		}
		if !inside {
			p := "filter_subject"
			if c.FilterSubject == "" {
				p = fmt.Sprintf("filter_subjects[%d]", i)
			}
			l.problemAt(r.at(p), "%s: filter %q is outside the stream's subjects (%s)", r.Label(), f, strings.Join(subjects, ", "))
		}
	}
}

// validateOverlaps reports declared streams whose subjects overlap: the
// server refuses the second. Each stream's subjects are looked up in an
// index of the streams before it; the problems come in the order of a
// comparison of every pair: by stream, then earlier stream, then subject
// of each.
func (l *loader) validateOverlaps() {
	type stream struct {
		r        *Resource
		name     string
		subjects []string
		valid    []bool
	}
	var streams []stream
	for _, r := range l.desired.Resources {
		if r.Kind == KindConsumer {
			continue
		}
		s := stream{r: r, name: r.StreamName(), subjects: streamSubjects(r)}
		s.valid = make([]bool, len(s.subjects))
		for i, sub := range s.subjects {
			s.valid[i] = validSubject(sub)
		}
		streams = append(streams, s)
	}
	type hit struct{ a, bi, ai int }
	var index subjectIndex
	var hits []hit
	for i, b := range streams {
		hits = hits[:0]
		for bi, bsub := range b.subjects {
			if !b.valid[bi] {
				continue
			}
			index.overlapping(bsub, func(ref subjectRef) {
				hits = append(hits, hit{ref.stream, bi, ref.subject})
			})
		}
		slices.SortFunc(hits, func(x, y hit) int {
			return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.bi, y.bi), cmp.Compare(x.ai, y.ai))
		})
		for _, h := range hits {
			a := streams[h.a]
			bsub, asub := b.subjects[h.bi], a.subjects[h.ai]
			if a.name == b.name || !subjectsCollide(asub, bsub) {
				continue
			}
			l.problemAt(b.r.at(fmt.Sprintf("subjects[%d]", h.bi)), "%s: subject %q overlaps %q of %s (%s)", b.r.Label(), bsub, asub, a.r.Label(), a.r.Pos)
		}
		for bi, bsub := range b.subjects {
			if b.valid[bi] {
				index.add(bsub, subjectRef{i, bi})
			}
		}
	}
}

// validateWorkQueues reports consumers of a workqueue stream whose filters
// overlap: the server allows only one consumer per subject.
func (l *loader) validateWorkQueues(streams map[string]*Resource) {
	byStream := map[string][]*Resource{}
	for _, r := range l.desired.Resources {
		if r.Kind == KindConsumer {
			byStream[r.Stream] = append(byStream[r.Stream], r)
		}
	}
	for name, consumers := range byStream {
		s := streams[name]
		if s == nil || s.Kind != KindStream || s.StreamConfig.Retention != jetstream.WorkQueuePolicy {
			continue
		}
		for i, b := range consumers {
			for _, a := range consumers[:i] {
				if f1, f2, ok := overlappingFilters(a.ConsumerConfig, b.ConsumerConfig); ok {
					l.problemAt(b.Pos, "%s: filter %q overlaps %q of consumer %q on workqueue stream %q (%s)", b.Label(), f2, f1, a.Name, name, a.Pos)
				}
			}
		}
	}
}

func overlappingFilters(a, b *jetstream.ConsumerConfig) (string, string, bool) {
	af, bf := consumerFilters(a), consumerFilters(b)
	if len(af) == 0 {
		af = []string{">"}
	}
	if len(bf) == 0 {
		bf = []string{">"}
	}
	for _, x := range af {
		for _, y := range bf {
			if validSubject(x) && validSubject(y) && subjectsCollide(x, y) {
				return x, y, true
			}
		}
	}
	return "", "", false
}
